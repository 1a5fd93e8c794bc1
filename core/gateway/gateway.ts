/**
 * SGLang's model gateway (`smg` on PyPI, 1.13.0) as the stack runs it: its
 * systemd unit, its 0600 EnvironmentFile of keys, the box-side script that
 * talks to its admin API with the key read on the box, and what its worker
 * list says against the declared servers. Pure: remote and providers run it.
 *
 * smg facts this follows (smg 1.13.0, read and run): `smg launch` starts the
 * gateway with no workers; `--control-plane-api-keys id:name:role:key` guards
 * the worker routes (POST/GET/DELETE /workers) and `--api-key` the data plane,
 * each Bearer. smg takes neither key from the environment or a file, only as
 * those flags (smg 1.13.0 smg/router_args.py lines 2254 and 2277, argparse with
 * no env default; no config file), so the unit runs smg's own entry point
 * (`smg = smg.cli:main`, cli.py line 55) in the venv's python with the flags
 * added in-process from the EnvironmentFile's variables (gatewayLauncher):
 * no key on any command line (issue 34 #5). The gateway
 * hands a client's Authorization on to the worker it picks, so its data-plane
 * key is the servers' own API key. Prometheus always listens (bound here to
 * 127.0.0.1). Workers: `{url, api_key}` in, status pending, ready, not_ready,
 * failed or draining out.
 */
import type { GatewayConfig, ServiceConfig } from "../config/schema";
import { isLoopback } from "../config/values";
import { PORT_HOLDER_PY } from "../box/port-holder";
import { DEFAULT_LISTEN_HOST } from "../sglang/rules";
import { escapeSpecifiers, ownerLine, renderEnvironmentFile, renderExecStart, RESTART_SECONDS, UnitOwner } from "../unit/systemd-unit";
import { environmentFilePath, serverConfigFilePath, unitName } from "../unit/unit-paths";
import { releaseVenvDir, venvPython } from "../venv/venv-layout";

/** The keys' names in the gateway's EnvironmentFile, as its unit expands them. */
export const GATEWAY_ENV = { adminKey: "SMG_ADMIN_KEY", apiKey: "SMG_API_KEY" } as const;

/** The gateway's venv and its smg entry point. */
export function gatewayVenvDir(gateway: Pick<GatewayConfig, "venv" | "smgVersion">): string {
    return releaseVenvDir(gateway.venv, gateway.smgVersion);
}

/** A worker as the gateway is told it: the server's endpoint, from the gateway's box. */
export function workerUrl(server: Pick<ServiceConfig, "endpointHost" | "port">): string {
    return `http://${server.endpointHost}:${server.port}`;
}

/** Where the stack reaches the gateway's admin API: from its own box, on loopback unless it listens on one address only. */
export function gatewayAdminUrl(gateway: Pick<GatewayConfig, "listenHost" | "port">): string {
    const listen = gateway.listenHost ?? DEFAULT_LISTEN_HOST;
    const host = listen === "0.0.0.0" || isLoopback(listen) ? "127.0.0.1" : listen;
    return `http://${host}:${gateway.port}`;
}

/**
 * The program the unit runs in the gateway venv's python: smg's own CLI
 * (`smg.cli.main(argv)`, what the `smg` script calls, in every smg 1.x) with
 * the command line's words and then the key flags, their values taken from
 * the EnvironmentFile's variables, in this process. A flag on ExecStart, even
 * as `${VAR}`, is the key on smg's command line for anyone on the box to read
 * in /proc/<pid>/cmdline (until smg renames its process) and in `ps`. The
 * variables are removed from the environment before smg starts; a missing one
 * stops the start (KeyError in the journal) rather than run the gateway open.
 */
export function gatewayLauncher(opts: { hasApiKey: boolean }): string {
    return [
        "import os, sys",
        `admin = os.environ.pop('${GATEWAY_ENV.adminKey}')`,
        ...(opts.hasApiKey ? [`api = os.environ.pop('${GATEWAY_ENV.apiKey}')`] : []),
        "from smg.cli import main",
        `main(sys.argv[1:] + ['--control-plane-api-keys', 'sglang-serve:sglang-serve:admin:' + admin]${opts.hasApiKey ? " + ['--api-key', api]" : ""})`,
    ].join("; ");
}

/** `smg launch` as the unit runs it: through gatewayLauncher, which adds the key flags. */
export function gatewayArgv(gateway: GatewayConfig, opts: { hasApiKey: boolean }): string[] {
    const h = gateway.healthCheck;
    return [
        venvPython(gatewayVenvDir(gateway)),
        // -I: no PYTHON* variables, no user site directory, nothing from the working directory.
        "-I",
        "-c",
        gatewayLauncher(opts),
        "launch",
        "--host",
        gateway.listenHost ?? DEFAULT_LISTEN_HOST,
        "--port",
        String(gateway.port),
        "--policy",
        gateway.policy,
        "--prometheus-host",
        "127.0.0.1",
        "--prometheus-port",
        String(gateway.prometheusPort),
        "--health-check-interval-secs",
        String(h.intervalSeconds),
        "--health-check-timeout-secs",
        String(h.timeoutSeconds),
        "--health-failure-threshold",
        String(h.failureThreshold),
        "--health-success-threshold",
        String(h.successThreshold),
        // Its log is colored text otherwise, escape codes and all, in the journal.
        "--log-json",
    ];
}

/** The text of `sglang-<name>.service` for the gateway. `hasApiKey`: the servers behind it require the API key, and so does it. */
export function renderGatewayUnit(gateway: GatewayConfig, opts: { hasApiKey: boolean; owner?: UnitOwner }): string {
    return [
        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`.",
        ...(opts.owner ? [ownerLine(opts.owner)] : []),
        "[Unit]",
        `Description=${escapeSpecifiers(`SGLang model gateway ${gateway.name} (smg ${gateway.smgVersion})`)}`,
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        `EnvironmentFile=${environmentFilePath(gateway.name)}`,
        "# smg takes its keys only as flags: the python program adds them from the 0600 EnvironmentFile in its own process, off the command line.",
        `ExecStart=${renderExecStart(gatewayArgv(gateway, opts))}`,
        "Restart=on-failure",
        `RestartSec=${RESTART_SECONDS}`,
        "# smg waits 5 s for in-flight requests to settle on SIGTERM.",
        "TimeoutStopSec=30",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

/** The gateway's 0600 EnvironmentFile: the admin key, and the servers' API key when they require one. */
export function renderGatewayEnvironmentFile(keys: { adminKey: string; apiKey?: string }): string {
    return renderEnvironmentFile({ [GATEWAY_ENV.adminKey]: keys.adminKey, ...(keys.apiKey !== undefined ? { [GATEWAY_ENV.apiKey]: keys.apiKey } : {}) });
}

/**
 * `python3 -I -c GATEWAY_ADMIN_SCRIPT <unit> <env file> <method> <url> [<json body>]`
 * on the gateway's box: one request to the gateway with the admin key read
 * from its EnvironmentFile there (so the key is on no command line and never
 * leaves the box); a POST of a worker gets the servers' API key from the same
 * file. Prints `{"status": <HTTP status, 0 when nothing answered>, "body": <text>}`,
 * with `"refused": true` when it sent nothing because the port is not the gateway's.
 *
 * The keys go only to the gateway (issue 34 #2): before the file is read,
 * every socket listening on the URL's port must belong to the gateway's unit
 * (core/box/port-holder.ts, as the /server_info read checks its server); else it
 * sends nothing and names the process that holds the port. No redirect is
 * followed (urllib's default opener follows a 307 with the Authorization
 * header and the body), and no proxy from the environment is used.
 */
export const GATEWAY_ADMIN_SCRIPT = String.raw`import json, os, socket, subprocess, sys, urllib.error, urllib.parse, urllib.request
unit, env_file, method, url = sys.argv[1:5]
body = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
def done(status, text, refused=False):
    print(json.dumps(dict({"status": status, "body": text[:20000]}, **({"refused": True} if refused else {}))))
    sys.exit(0)
try:
    parsed = urllib.parse.urlsplit(url)
    host, port = parsed.hostname, parsed.port
except ValueError as e:
    done(0, "%s %s: %s; nothing was sent" % (method, url, e), True)
if parsed.scheme != "http" or not host or not port:
    done(0, "%s %s: not an http://<host>:<port> URL; nothing was sent" % (method, url), True)
${PORT_HOLDER_PY}held = listening(port)
if not held:
    done(0, "%s %s: nothing listens on port %s; nothing was sent" % (method, url, port))
main, pids = unit_processes()
ours = set()
for p in pids:
    ours |= sockets(p)
for inode in sorted(held - ours):
    done(0, "%s %s: port %s is held by %s, not by %s (MainPID %s); the admin key was not sent" % (method, url, port, holder(inode), unit, main), True)
keys = {}
with open(env_file, encoding="utf-8") as f:
    for line in f:
        name, eq, value = line.strip().partition("=")
        if eq and not name.startswith("#"):
            keys[name] = value
if body is not None and method == "POST" and "${GATEWAY_ENV.apiKey}" in keys:
    body["api_key"] = keys["${GATEWAY_ENV.apiKey}"]
data = None if body is None else json.dumps(body).encode()
headers = {"Authorization": "Bearer " + keys.get("${GATEWAY_ENV.adminKey}", ""), "Content-Type": "application/json"}
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
try:
    with opener.open(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=10) as r:
        status, text = r.status, r.read().decode("utf-8", "replace")
except urllib.error.HTTPError as e:
    status, text = e.code, e.read().decode("utf-8", "replace")
except Exception as e:
    status, text = 0, str(e)
done(status, text)
`;

export function gatewayAdminArgv(gatewayName: string, method: "GET" | "POST" | "DELETE", url: string, body?: unknown): string[] {
    return [
        "python3",
        "-I",
        "-c",
        GATEWAY_ADMIN_SCRIPT,
        unitName(gatewayName),
        environmentFilePath(gatewayName),
        method,
        url,
        ...(body === undefined ? [] : [JSON.stringify(body)]),
    ];
}

export interface AdminAnswer {
    status: number;
    body: string;
    /** Nothing was sent: the port is held by a process that is not the gateway's (body names it), or the URL is not one to ask. */
    refused?: true;
}

export function parseAdminAnswer(stdout: string): AdminAnswer {
    const line = stdout.trim().split("\n").pop() ?? "";
    try {
        const parsed = JSON.parse(line) as { status?: unknown; body?: unknown; refused?: unknown };
        if (typeof parsed.status === "number" && typeof parsed.body === "string")
            return { status: parsed.status, body: parsed.body, ...(parsed.refused === true ? { refused: true as const } : {}) };
    } catch {
        // fall through
    }
    return { status: 0, body: stdout.trim().slice(0, 300) };
}

/** A worker as `GET /workers` lists it. */
export interface GatewayWorker {
    id: string;
    url: string;
    /** pending, ready, not_ready, failed or draining. */
    status: string;
    /** Requests the gateway has in flight to it. */
    load: number;
}

/** The workers of `GET /workers` (`{workers: [...]}`). Throws on another shape. */
export function parseWorkers(body: string): GatewayWorker[] {
    const parsed = JSON.parse(body) as { workers?: unknown };
    if (!Array.isArray(parsed.workers)) throw new Error(`GET /workers gave no worker list: ${body.slice(0, 200)}`);
    return parsed.workers.map((w: Record<string, unknown>) => ({
        id: String(w.id),
        url: String(w.url),
        status: String(w.status ?? (w.is_healthy ? "ready" : "not_ready")),
        load: Number(w.load ?? 0),
    }));
}

/** The gateway's workers against the declared ones: what is missing, what it has that is not declared, what is declared but not ready. */
export interface WorkerDrift {
    missing: string[];
    extra: GatewayWorker[];
    notReady: GatewayWorker[];
}

export function workerDrift(declared: readonly string[], listed: readonly GatewayWorker[]): WorkerDrift {
    return {
        missing: declared.filter((url) => !listed.some((w) => w.url === url)),
        extra: listed.filter((w) => !declared.includes(w.url)),
        notReady: listed.filter((w) => declared.includes(w.url) && w.status !== "ready"),
    };
}

export function hasWorkerDrift(d: WorkerDrift): boolean {
    return d.missing.length + d.extra.length + d.notReady.length > 0;
}

/** The drift in words, one clause per kind; empty when there is none. */
export function describeWorkerDrift(d: WorkerDrift): string[] {
    return [
        ...d.missing.map((url) => `worker ${url} is not registered`),
        ...d.extra.map((w) => `worker ${w.url} is registered (${w.status}) but not declared`),
        ...d.notReady.map((w) => `worker ${w.url} is ${w.status}, not ready`),
    ];
}

/** A server behind the gateway, as its rollout sees it (a prop of the SglangService): where the gateway is, and the server's worker URL. */
export interface GatewayMembership {
    /** The gateway's box, where its admin API is asked. */
    connection: { address: string; port: number; user: string; hostKey: string; topology: "direct" | "pct-exec"; vmid?: number };
    /** gateway.name: its EnvironmentFile holds the admin key. */
    name: string;
    adminUrl: string;
    workerUrl: string;
    drainTimeoutSeconds: number;
}

/**
 * `python3 -I -c SERVER_LOAD_SCRIPT <server config file> <endpoint>` on the
 * server's box: SGLang's own count of the requests it holds (GET /v1/loads,
 * `aggregate.total_reqs`: running and waiting; every release from 0.5.9), with
 * the server's API key read there from its 0600 config file when it has one.
 * Prints `{"status": <HTTP status, 0 when nothing answered>, "total": <count or null>}`.
 */
export const SERVER_LOAD_SCRIPT = `import json, re, sys, urllib.error, urllib.request
config_file, endpoint = sys.argv[1:3]
headers = {}
try:
    with open(config_file, encoding="utf-8") as f:
        m = re.search(r'^api-key: "([^"]*)"', f.read(), re.M)
    if m:
        headers["Authorization"] = "Bearer " + m.group(1)
except OSError:
    pass
try:
    with urllib.request.urlopen(urllib.request.Request(endpoint + "/v1/loads?include=core", headers=headers), timeout=10) as r:
        body = json.loads(r.read().decode("utf-8", "replace"))
        print(json.dumps({"status": r.status, "total": body.get("aggregate", {}).get("total_reqs")}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "total": None}))
except Exception:
    print(json.dumps({"status": 0, "total": None}))
`;

export function serverLoadArgv(serverName: string, endpoint: string): string[] {
    return ["python3", "-I", "-c", SERVER_LOAD_SCRIPT, serverConfigFilePath(serverName), endpoint];
}

/** The requests a server holds, from SERVER_LOAD_SCRIPT's line; undefined when it gave no count. */
export function parseServerLoad(stdout: string): number | undefined {
    try {
        const parsed = JSON.parse(stdout.trim().split("\n").pop() ?? "") as { status?: number; total?: unknown };
        return parsed.status === 200 && typeof parsed.total === "number" ? parsed.total : undefined;
    } catch {
        return undefined;
    }
}
