// The gateway scenario of issue 20, shared by its e2e
// (tests/e2e/gateway.test.ts) and `npm run bench`'s rolling phase: SGLang's
// gateway (smg, installed by the stack from the lab's wheelhouse) on kpro5, in
// front of three servers over two lab boxes: two one-GPU servers on kpro5 (a
// lab with two H200-sized GPUs) and the field's TP 2 server on kpro6 (a second
// lab, container 130).
import { simulatorEvents } from "./control";
import { labStackConfig, LabMachines, StackConfigFile } from "./stack";
import { CT_WHEELHOUSE, LAB_GATEWAY_RELEASE } from "./sglang/venvs";

/** kpro5's GPUs in the scenario: each holds the 27B model at TP 1. */
export const GATEWAY_LAB_GPU = { name: "NVIDIA H200", memoryMiB: 143771 };
/** The servers in the order the stack declares (and rolls) them: qwen and qwen-b on kpro5, qwen-c on kpro6. */
export const GATEWAY_SERVERS = ["qwen", "qwen-b", "qwen-c"] as const;
export type GatewayServerName = (typeof GATEWAY_SERVERS)[number];
/** Settings changed per server, over what the scenario declares. */
export type ServerChanges = Partial<Record<GatewayServerName, Record<string, unknown>>>;
const GATEWAY_PORT = 30080;

export interface GatewayScenario {
    /** Where clients of the gateway send requests. */
    gatewayUrl: string;
    /** A short chat completion, as a client of the gateway sends it. */
    chat: Record<string, unknown>;
    /** Each server's worker URL, as the gateway lists it, in GATEWAY_SERVERS order. */
    workerUrls: string[];
    /** Each server's box (kpro5 is `a`, kpro6 `b`) and port, in GATEWAY_SERVERS order. */
    placement: Array<{ box: "a" | "b"; port: number }>;
    /** The stack config: the three servers, each with its entry of `changes` applied, and the gateway. */
    config(changes?: ServerChanges): StackConfigFile;
}

/** Starts of each server so far (the labs' launch events), in GATEWAY_SERVERS order; `labDirs` the labs of boxes a and b. */
export function serverLaunches(scenario: GatewayScenario, labDirs: { a: string; b: string }): number[] {
    return scenario.placement.map(
        ({ box, port }) => simulatorEvents(labDirs[box]).filter((e) => e.event === "launched" && String(e.detail ?? "").includes(`--port ${port}`)).length,
    );
}

/** One change to every server. */
export function everyServer(change: Record<string, unknown>): ServerChanges {
    return Object.fromEntries(GATEWAY_SERVERS.map((n) => [n, change]));
}

/** The scenario on the labs `a` (kpro5, two GATEWAY_LAB_GPUs) and `b` (kpro6, container 130). */
export function gatewayScenario(a: LabMachines, b: LabMachines): GatewayScenario {
    const configA = labStackConfig(a, "pct-exec");
    const configB = labStackConfig(b, "pct-exec");
    Object.assign(configA["sglang-serve:host"]!.gpus as Record<string, unknown>, GATEWAY_LAB_GPU);
    const one: Record<string, unknown> = { ...configA["sglang-serve:service"]!, tensorParallelSize: 1 };
    const declared: Record<GatewayServerName, Record<string, unknown>> = {
        qwen: { ...one, name: "qwen", box: "kpro5", gpus: [0] },
        "qwen-b": { ...one, name: "qwen-b", box: "kpro5", gpus: [1], port: 30001 },
        "qwen-c": { ...configB["sglang-serve:service"]!, name: "qwen-c", box: "kpro6" },
    };
    const placement = GATEWAY_SERVERS.map((n) => ({ box: declared[n].box === "kpro5" ? ("a" as const) : ("b" as const), port: declared[n].port as number }));
    return {
        gatewayUrl: `http://${a.container.address}:${GATEWAY_PORT}`,
        chat: { model: (one.model as { servedName: string }).servedName, messages: [{ role: "user", content: "Say hello." }], max_tokens: 8 },
        workerUrls: placement.map((p) => `http://${(p.box === "a" ? a : b).container.address}:${p.port}`),
        placement,
        config: (changes = {}) => ({
            "sglang-serve:boxes": [
                { host: configA["sglang-serve:host"], container: configA["sglang-serve:container"] },
                { host: { ...configB["sglang-serve:host"], name: "kpro6" }, container: configB["sglang-serve:container"] },
            ] as unknown as Record<string, unknown>,
            "sglang-serve:servers": GATEWAY_SERVERS.map((n) => ({ ...declared[n], ...changes[n] })) as unknown as Record<string, unknown>,
            "sglang-serve:gateway": {
                box: "kpro5",
                smgVersion: LAB_GATEWAY_RELEASE,
                venv: { root: "/opt/smg", findLinks: [CT_WHEELHOUSE], pipArgs: ["--no-index"] },
                listenHost: "0.0.0.0",
                port: GATEWAY_PORT,
                endpointHost: a.container.address,
                healthCheck: { intervalSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1 },
            },
            // One start per config: a change that crashes is rolled back at once. The load's 8-token chats pull
            // the running servers' live accept length well below the prompt set's (docs/rollout.md: every
            // refresh reads the running server's accept length): the refresh after a run under load would call that drift at 10%.
            "sglang-serve:readiness": { ...configA["sglang-serve:readiness"], startAttempts: 1, acceptLengthDropLimit: 0.5 },
        }),
    };
}
