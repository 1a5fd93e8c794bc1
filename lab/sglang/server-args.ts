// The simulated server's view of the release's own ServerArgs: what its HTTP
// API (lab/sglang/http-api.ts) reports and its speculation (lab/sglang/speculation.ts) reads.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** The release's resolved ServerArgs (dataclasses.asdict). */
export type ServerArgs = Record<string, JsonValue>;
