// `/server_info` read on the box itself, for refreshes. SGLang answers
// /server_info only with the API key, and a preview or drift check (the
// read-only key, gate/sglang-serve-read-gate) should not need it: this small
// python3 program runs where the server runs, takes the server's address and
// port from the unit file and the key from the 0600 EnvironmentFile, asks the
// server on the box's own address, and prints only the fields the stack reads
// (SERVER_INFO_FIELDS). The key never leaves the box, and the answer never
// carries it (SGLang's /server_info echoes `api_key` with the other args).
//
// The read-only gate on the box allows exactly this program (byte for byte):
// its install script carries the program as this file renders it
// (core/read-gate/reads.ts), so a change here needs the gate reinstalled.

import { PORT_HOLDER_PY } from "../box/port-holder";
import { SERVER_INFO_FIELDS } from "./settings";

/** The keys kept of each `internal_states[]` entry (at most SERVER_INFO_MAX_STATES entries). */
export const SERVER_INFO_STATE_FIELDS = { avg_spec_accept_length: "number" } as const;

/** The most of an answer the box reads; a longer one is an error, not parsed. */
export const SERVER_INFO_MAX_BODY_BYTES = 1_048_576;
export const SERVER_INFO_MAX_STRING = 4096;
export const SERVER_INFO_MAX_STATES = 64;

/**
 * argv: unit file, EnvironmentFile, timeout in seconds. Prints one JSON line:
 * {"status": N, "body": {...}} (body only for a JSON object answer), or
 * {"error": "..."}; exits 0 unless python itself fails. No proxies (the key
 * would go to one), no redirects (urllib resends the Authorization header).
 *
 * The key goes only to the unit's own server: before it is read, every socket
 * listening on the unit's port must belong to the unit (its MainPID, the
 * processes of its cgroup, or their children; systemctl, /sys/fs/cgroup,
 * /proc/net/tcp{,6} and /proc/<pid>/fd). Otherwise the read asks nothing and
 * names the process that holds the port (issue 19: a process that grabs the
 * port while SGLang is down must not get the key).
 */
export const SERVER_INFO_SCRIPT = String.raw`import json, os, socket, subprocess, sys, urllib.error, urllib.request
unit_path, env_path, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
FIELDS = ${JSON.stringify(SERVER_INFO_FIELDS)}
STATE_FIELDS = ${JSON.stringify(SERVER_INFO_STATE_FIELDS)}
MAX_BODY, MAX_STRING, MAX_STATES = ${SERVER_INFO_MAX_BODY_BYTES}, ${SERVER_INFO_MAX_STRING}, ${SERVER_INFO_MAX_STATES}
def done(result):
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.exit(0)
try:
    with open(unit_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
except FileNotFoundError:
    done({"error": "no unit file " + unit_path})
words = []
for i, line in enumerate(lines):
    if line.startswith("ExecStart="):
        text = line[len("ExecStart="):]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        words = text.split()
        break
def flag(name, default):
    for j, w in enumerate(words):
        if w == name and j + 1 < len(words):
            return words[j + 1]
        if w.startswith(name + "="):
            return w[len(name) + 1:]
    return default
host = flag("--host", "127.0.0.1")
host = {"0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}.get(host, host)
port = flag("--port", "30000")
if not port.isdigit() or not 0 < int(port) < 65536:
    done({"error": "the --port in " + unit_path + " is not a port: " + port})
url = "http://%s:%s/server_info" % ("[" + host.strip("[]") + "]" if ":" in host else host, port)
unit = os.path.basename(unit_path)
${PORT_HOLDER_PY}held = listening(int(port))
if not held:
    done({"error": "GET %s: nothing listens on port %s; nothing was sent" % (url, port)})
main, pids = unit_processes()
ours = set()
for p in pids:
    ours |= sockets(p)
for inode in sorted(held - ours):
    done({"error": "GET %s: port %s is held by %s, not by %s (MainPID %s); the API key was not sent" % (url, port, holder(inode), unit, main)})
key = None
try:
    with open(env_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("SGLANG_API_KEY="):
                key = line.strip()[len("SGLANG_API_KEY="):]
except FileNotFoundError:
    pass
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
request = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
try:
    with opener.open(request, timeout=timeout) as response:
        status, body = response.status, response.read(MAX_BODY + 1)
except urllib.error.HTTPError as e:
    done({"status": e.code})
except Exception as e:
    done({"error": "GET %s: %s" % (url, e)})
if len(body) > MAX_BODY:
    done({"status": status, "error": "GET %s: the answer is larger than %d bytes" % (url, MAX_BODY)})
try:
    info = json.loads(body)
except (ValueError, RecursionError):
    info = None
if not isinstance(info, dict):
    done({"status": status, "error": "GET %s: the answer is not a JSON object" % url})
def typed(value, kind):
    if value is None:
        return True
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= 1e15
    return isinstance(value, str) and len(value) <= MAX_STRING
def pick(d, fields, where):
    for k, kind in fields.items():
        if k in d and not typed(d[k], kind):
            limit = " of at most %d characters" % MAX_STRING if kind == "string" else " up to 1e15" if kind == "number" else ""
            done({"status": status, "error": "GET %s: /server_info is not the expected JSON object: %s%s is a %s, not a %s%s" % (url, where, k, type(d[k]).__name__, kind, limit)})
    return {k: d[k] for k in fields if k in d}
out = pick(info, FIELDS, "")
if isinstance(info.get("server_args"), dict):
    out["server_args"] = pick(info["server_args"], FIELDS, "server_args.")
if isinstance(info.get("internal_states"), list):
    out["internal_states"] = [pick(s, STATE_FIELDS, "internal_states[].") for s in info["internal_states"][:MAX_STATES] if isinstance(s, dict)]
done({"status": status, "body": out})
`;

export interface ServerInfoReadRequest {
    /** /etc/systemd/system/sglang-<name>.service */
    unitPath: string;
    /** /etc/sglang/<name>.env */
    environmentFilePath: string;
    /** How long the box waits for the server's answer. */
    timeoutSeconds: number;
}

/** The argv to run where the server runs (RemoteHost.run wraps it in `pct exec` for pct-exec). */
export function serverInfoReadArgv(req: ServerInfoReadRequest): string[] {
    if (!Number.isInteger(req.timeoutSeconds) || req.timeoutSeconds < 1 || req.timeoutSeconds > 3600) {
        throw new Error(`server_info read: timeoutSeconds must be an integer from 1 to 3600, got ${req.timeoutSeconds}`);
    }
    // -I: no PYTHON* variables, no user site directory, nothing from the working directory.
    return ["python3", "-I", "-c", SERVER_INFO_SCRIPT, req.unitPath, req.environmentFilePath, String(req.timeoutSeconds)];
}

/** What the box answered: the server's status (and body), or why it could not ask. */
export type ServerInfoReadResult = { status: number; body?: unknown; error?: string } | { error: string };

/** Parses the program's one JSON line; anything else is an error value naming what came back. */
export function parseServerInfoReadOutput(stdout: string): ServerInfoReadResult {
    const line = stdout.trim().split("\n").pop() ?? "";
    let parsed: unknown;
    try {
        parsed = JSON.parse(line);
    } catch {
        return { error: `the /server_info read on the box printed no JSON: ${JSON.stringify(stdout.slice(0, 200))}` };
    }
    if (parsed === null || typeof parsed !== "object") return { error: `the /server_info read on the box printed ${JSON.stringify(line.slice(0, 200))}` };
    const o = parsed as { status?: unknown; body?: unknown; error?: unknown };
    if (typeof o.status === "number") {
        return { status: o.status, ...(o.body !== undefined ? { body: o.body } : {}), ...(typeof o.error === "string" ? { error: o.error } : {}) };
    }
    if (typeof o.error === "string") return { error: o.error };
    return { error: `the /server_info read on the box printed ${JSON.stringify(line.slice(0, 200))}` };
}
