// The seam for driving the four dynamic providers directly: their SSH goes
// through the run's pool (providers/provider-run.ts), and the box hands them a
// run whose pool runs the commands in a FakeBox (tests/remote/fake-box.ts):
// the command string the provider would send over SSH is run by a local `sh`,
// with fake pct, systemctl, journalctl, nvidia-smi and pveversion first on
// PATH and the box's own paths (/etc/pve, /etc/systemd/system, /etc/sglang,
// /run/lock/lxc, /proc/devices, the SGLang venv in /opt/sglang and the model
// in /models) mapped into the box's directory, as a chroot would. So the
// providers' real scripts run (quoting, sentinels, the config lock, tmp +
// rename) and their decisions can be checked without an engine run or an
// sshd. The pool's own execChecked (exit code and stderr in the error) is
// the real one: only exec is replaced.
//
// The "server" is an HTTP server on loopback that answers for the unit as the
// fake systemctl started it: /server_info is taken from the ExecStart the unit
// had at its start (a unit changed but not restarted still reports the old
// args), the API key from the EnvironmentFile it had then.

import * as fs from "fs";
import * as http from "http";
import * as net from "net";
import * as path from "path";
import type { Connection } from "../../core/connection";
import { PROVIDER_VERSION } from "../../components/dynamic-provider";
import { ReadinessConfig, ReadinessSchema, ServiceConfig, ServiceSchema } from "../../core/config/schema";
import { PlanBox, planServer } from "../../core/plan/server-plan";
import { API_KEY_VARIABLE, renderSecretFiles } from "../../core/secrets/deploy-secrets";
import type { UnitOwner } from "../../core/unit/systemd-unit";
import { ProviderRun } from "../../providers/provider-run";
import type { ServiceProps } from "../../providers/sglang-server/props";
import { SshPool } from "../../remote/ssh-pool";
import { ExecOptions, ExecResult, SshTarget } from "../../remote/ssh-target";
import { fieldConfig } from "../core/fixtures";
import { FakeBox } from "../remote/fake-box";
import { HOST_PYTHON, HOST_PYTHON_VERSION, venvPython } from "../host-python";

/** The box's paths that live in its directory; everything else is this machine's. */
const BOX_PATHS = [
    "/etc/pve/",
    "/etc/systemd/system",
    "/etc/sglang",
    "/run/lock/lxc",
    "/proc/devices",
    "/opt/sglang/",
    // Also the models root alone (the prune lists `/models`).
    "/models",
    // The weights' staging (issue 33): the hub venv, its state folders and token files, the box-side program.
    "/opt/sglang-serve/",
    "/run/sglang-serve/",
    "/var/lib/sglang-serve/",
];
const BOX_PATH = new RegExp(`(^|[\\s'"=;(])(${BOX_PATHS.map((p) => p.replace(/[/.]/g, "\\$&")).join("|")})`, "g");

// pct as pve-container answers the calls the providers make. The config is
// /etc/pve/lxc/<vmid>.conf; `pct set` writes options into the current
// section (no [pve:pending] handling); `exec` runs its command here. In
// Python (pct.py beside bin/), but for PCT_EXEC's plain exec.
const PCT_PY = `#!${HOST_PYTHON} -S
import os, sys
D = os.environ["FAKE_DIR"]
with open(os.path.join(D, "calls"), "a") as f:
    f.write("pct " + " ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
verb, vmid = args[0], args[1]
conf = os.path.join(D, "root/etc/pve/lxc", vmid + ".conf")
status_file = os.path.join(D, "ct-" + vmid + ".status")
def status():
    return open(status_file).read().strip() if os.path.exists(status_file) else "running"
def fail(message, code=255):
    sys.stderr.write(message + "\\n")
    sys.exit(code)
if not os.path.exists(conf):
    fail("Configuration file 'nodes/pve/lxc/%s.conf' does not exist" % vmid)
text = open(conf, encoding="latin-1").read()
lines = text.split("\\n")
first = next((i for i, l in enumerate(lines) if l.startswith("[")), len(lines))
main, rest = lines[:first], lines[first:]
if verb == "config":
    sys.stdout.write("\\n".join(l for l in main if l.strip() != "") + "\\n")
elif verb == "status":
    print("status: " + status())
elif verb == "set":
    if any(l.startswith("lock:") for l in main):
        fail("CT is locked (%s)" % next(l for l in main if l.startswith("lock:")).split(":", 1)[1].strip(), 25)
    pairs = args[2:]
    for i in range(0, len(pairs), 2):
        key, value = pairs[i].lstrip("-"), pairs[i + 1]
        at = [j for j, l in enumerate(main) if l.startswith(key + ":")]
        if at:
            main[at[-1]] = key + ": " + value
        else:
            end = len(main)
            while end > 0 and main[end - 1].strip() == "":
                end -= 1
            main.insert(end, key + ": " + value)
    with open(conf + ".tmp", "w", encoding="latin-1") as f:
        f.write("\\n".join(main + rest))
    os.rename(conf + ".tmp", conf)
elif verb == "start":
    open(status_file, "w").write("running\\n")
elif verb == "stop":
    open(status_file, "w").write("stopped\\n")
elif verb == "destroy":
    if status() == "running":
        fail("CT %s is running - destroy failed" % vmid)
    os.remove(conf)
elif verb == "exec":
    if status() != "running":
        fail("container '%s' not running!" % vmid)
    command = args[2:]
    if command and command[0] == "--":
        command = command[1:]
    try:
        os.execvp(command[0], command)
    except FileNotFoundError:
        # lxc-attach's own words when the command is not in the container.
        fail('lxc-attach: %s: ../src/lxc/attach.c: lxc_attach_run_command: 1841 No such file or directory - Failed to exec "%s"' % (vmid, command[0]), 127)
else:
    fail("fake pct: %s not faked" % verb, 2)
`;

// `pct exec <vmid> -- <command...>` of a running container whose command is
// there, in sh: every command the providers send to the box (kpro5's
// topology) goes through it, and a Python start before each (about 12 ms of
// CPU) was most of a command's cost. It records the call as pct.py does and
// execs the command; every other shape (another verb, a missing config, a
// stopped container, a command not found) is pct.py's, which prints PVE's and
// lxc-attach's words.
const PCT_EXEC = `#!/bin/sh
if [ "$1" = exec ] && [ "$3" = -- ] && [ $# -gt 3 ] && [ -f "$FAKE_DIR/root/etc/pve/lxc/$2.conf" ] && command -v "$4" > /dev/null; then
  status=running
  [ -f "$FAKE_DIR/ct-$2.status" ] && read -r status < "$FAKE_DIR/ct-$2.status"
  if [ "$status" = running ]; then
    printf '%s\\n' "pct $*" >> "$FAKE_DIR/calls"
    shift 3
    exec "$@"
  fi
fi
exec "$FAKE_DIR/pct.py" "$@"
`;

// systemd for the units in /etc/systemd/system of the box: state in
// systemd.json, starts as $FAKE_DIR/starts says (one behaviour a line, "ready"
// when it runs out), the journal in $FAKE_DIR/journal (fake-box.ts's
// journalctl reads it), GPU memory in $FAKE_DIR/gpus and apps. The state is
// read without the json module (its import, with re's, was about half the
// CPU of a `systemctl show`, the call the providers make most): what
// json.dump writes here (objects, strings, integers, true and false) is
// Python's literal syntax too, with true and false named.
const SYSTEMCTL = `#!${HOST_PYTHON} -S
import os, sys
D = os.environ["FAKE_DIR"]
with open(os.path.join(D, "calls"), "a") as f:
    f.write("systemctl " + " ".join(sys.argv[1:]) + "\\n")
STATE = os.path.join(D, "systemd.json")
def load(p):
    with open(p) as f:
        return eval(f.read(), {"__builtins__": {}, "true": True, "false": False})
state = load(STATE) if os.path.exists(STATE) else {"next_pid": 4242, "units": {}}
def save():
    import json
    with open(STATE + ".tmp", "w") as f:
        json.dump(state, f)
    os.rename(STATE + ".tmp", STATE)
def unit(name):
    return state["units"].setdefault(name, {"active": "inactive", "sub": "dead", "pid": 0, "restarts": 0, "enabled": False})
def unit_file(name):
    return os.path.join(D, "root/etc/systemd/system", name)
def journal(lines):
    with open(os.path.join(D, "journal"), "a") as f:
        f.write("".join(l + "\\n" for l in lines))
def gpus(used):
    open(os.path.join(D, "gpus"), "w").write("0, GPU-0, %d\\n1, GPU-1, %d\\n" % (used, used))
    open(os.path.join(D, "apps"), "w").write("%d, %d, GPU-0\\n%d, %d, GPU-1\\n" % (state["next_pid"], used, state["next_pid"], used) if used > 1024 else "")
def read(p):
    return open(p).read() if os.path.exists(p) else None
def stop(u):
    u.update(active="inactive", sub="dead", pid=0)
    if not os.path.exists(os.path.join(D, "gpu-stuck")):
        gpus(3)
args = [a for a in sys.argv[1:] if a != "--"]
verb = args[0]
if verb == "show":
    props, names, i = [], [], 1
    while i < len(args):
        if args[i] == "-p":
            props += args[i + 1].split(",")
            i += 2
        else:
            names.append(args[i])
            i += 1
    blocks = []
    for n in names:
        u = state["units"].get(n) or {"active": "inactive", "sub": "dead", "pid": 0, "restarts": 0, "enabled": False}
        file_state = ("enabled" if u["enabled"] else "disabled") if os.path.exists(unit_file(n)) else ""
        values = {"Id": n, "ActiveState": u["active"], "SubState": u["sub"], "MainPID": u["pid"], "NRestarts": u["restarts"], "UnitFileState": file_state}
        # The fake server runs in the test process (FAKE_SERVER_PID): the /server_info read, which asks for
        # the MainPID alone to know who may hold the port (core/sglang/server-info-read.ts), gets that process.
        if props == ["MainPID"] and u["active"] == "active" and os.environ.get("FAKE_SERVER_PID"):
            values["MainPID"] = os.environ["FAKE_SERVER_PID"]
        blocks.append("".join("%s=%s\\n" % (p, values[p]) for p in props))
    sys.stdout.write("\\n".join(blocks))
elif verb == "start":
    n = args[1]
    if not os.path.exists(unit_file(n)):
        sys.stderr.write("Failed to start %s: Unit %s not found.\\n" % (n, n))
        sys.exit(5)
    u = unit(n)
    if u["active"] == "active":
        # As systemd does: starting an active unit changes nothing.
        sys.exit(0)
    starts = os.path.join(D, "starts")
    plan = (read(starts) or "").split()
    how = plan.pop(0) if plan else "ready"
    open(starts, "w").write("\\n".join(plan))
    if how == "refuse":
        u.update(active="failed", sub="failed", pid=0)
        save()
        sys.stderr.write("Job for %s failed because the control process exited with error code.\\n" % n)
        sys.exit(1)
    state["next_pid"] += 1
    env_file = os.path.join(D, "root/etc/sglang", n[len("sglang-"):-len(".service")] + ".env")
    config_file = env_file[: -len(".env")] + ".yaml"
    # What the process runs: the unit, the environment file and SGLang's config file as they are at its start.
    import json
    json.dump({"unit": read(unit_file(n)), "env": read(env_file), "config": read(config_file)}, open(os.path.join(D, "process.json"), "w"))
    if how == "ready":
        u.update(active="active", sub="running", pid=state["next_pid"])
        gpus(45210)
        journal(["[2026-05-02 10:00:07 TP0] Load weight begin. avail mem=46.89 GB",
                 "[2026-05-02 10:02:43] INFO:     Uvicorn running on http://127.0.0.1 (Press CTRL+C to quit)",
                 "[2026-05-02 10:02:46] The server is fired up and ready to roll!"])
    elif how == "crash":
        u.update(active="failed", sub="failed", pid=0)
        journal(["Traceback (most recent call last):",
                 '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/server_args.py", line 1480, in __post_init__',
                 "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer."])
    else:
        sys.stderr.write("fake systemctl: unknown start behaviour %s\\n" % how)
        sys.exit(2)
    save()
elif verb == "stop":
    stop(unit(args[1]))
    save()
elif verb == "enable":
    if not os.path.exists(unit_file(args[1])):
        sys.stderr.write("Failed to enable unit: Unit file %s does not exist.\\n" % args[1])
        sys.exit(1)
    unit(args[1])["enabled"] = True
    save()
elif verb == "disable":
    now = "--now" in args
    n = [a for a in args[1:] if not a.startswith("--")][0]
    unit(n)["enabled"] = False
    if now:
        stop(unit(n))
    save()
elif verb == "reset-failed":
    u = unit(args[1])
    if u["active"] == "failed":
        u.update(active="inactive", sub="dead")
    save()
elif verb == "daemon-reload":
    pass
elif verb == "is-system-running":
    print("running")
elif verb == "is-active":
    # A transient unit (the weights' staging) has ended by the time it is asked about: the fake systemd-run runs it to its end.
    u = state["units"].get(args[1])
    print(u["active"] if u else "inactive")
    sys.exit(0 if u and u["active"] == "active" else 3)
else:
    sys.stderr.write("fake systemctl: %s not faked\\n" % verb)
    sys.exit(2)
`;

// systemd-run for the weights' staging alone (core/weights/staging.ts stageWeightsArgv):
// it runs the box-side program's part to its end at once, from the Hub the test
// declares in $FAKE_DIR/hub.json ({"<repo>@<revision>": {"files": {path: text},
// "corrupt": {path: text served instead}}}): the files, the marker, the
// manifest (written last, only when every file matched), the log, the result
// and the exit status, as weights/sglang-serve-weights.py writes them.
const SYSTEMD_RUN = `#!${HOST_PYTHON} -S
import hashlib, json, os, sys, time
D = os.environ["FAKE_DIR"]
with open(os.path.join(D, "calls"), "a") as f:
    f.write("systemd-run " + " ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
unit = next(a.split("=", 1)[1] for a in args if a.startswith("--unit="))
if "-weights-" not in unit:
    sys.stderr.write("fake systemd-run: only the weights' staging is faked, not %s\\n" % unit)
    sys.exit(2)
def opt(name):
    return args[args.index(name) + 1]
repo, rev, d, state, owner = opt("--repo"), opt("--revision"), opt("--dir"), opt("--state"), opt("--owner")
entry = json.load(open(os.path.join(D, "hub.json")))[repo + "@" + rev]
def write(p, text):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
ours = os.path.join(d, ".sglang-serve-weights")
write(os.path.join(ours, "staged-by.json"), json.dumps({"repo": repo, "revision": rev, "stagedBy": owner, "startedAt": time.time()}))
mismatches, listed = [], []
for p, text in sorted(entry["files"].items()):
    got = entry.get("corrupt", {}).get(p, text)
    write(os.path.join(d, p), got)
    expected, actual = hashlib.sha256(text.encode()).hexdigest(), hashlib.sha256(got.encode()).hexdigest()
    if expected != actual:
        mismatches.append({"path": p, "algorithm": "sha256", "expected": expected, "actual": actual})
        os.remove(os.path.join(d, p))
        continue
    st = os.stat(os.path.join(d, p))
    listed.append({"path": p, "size": st.st_size, "sha256": actual, "mtimeNs": str(st.st_mtime_ns)})
write(os.path.join(state, "log"), "sglang-serve: fetched %d files from the mirror\\n" % len(entry["files"]))
if mismatches:
    code, result = 66, {"exitStatus": 66, "mismatches": mismatches}
else:
    digest = hashlib.sha256("".join("%s  %d  %s\\n" % (f["sha256"], f["size"], f["path"]) for f in listed).encode()).hexdigest()
    manifest = {"format": 1, "repo": repo, "revision": rev, "stagedBy": owner, "stagedAt": int(time.time()), "files": listed, "digest": digest}
    write(os.path.join(ours, "manifest.json"), json.dumps(manifest))
    code, result = 0, {"exitStatus": 0, "staged": True, "digest": digest}
write(os.path.join(state, "result.json"), json.dumps(result))
write(os.path.join(state, "exit"), "%d\\n" % code)
`;

// nvidia-smi: the GpuHost's facts query, and fake-box.ts's memory queries.
const NVIDIA_SMI = `#!/bin/sh
echo "nvidia-smi $*" >> "$FAKE_DIR/calls"
[ -e "$FAKE_DIR/nvidia-smi-broken" ] && { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."; exit 9; }
case "$1" in
  --query-gpu=index,name,memory.total,driver_version,uuid,compute_cap) cat "$FAKE_DIR/gpu-facts" ;;
  --query-gpu=index,uuid,memory.used) cat "$FAKE_DIR/gpus" ;;
  --query-compute-apps=pid,used_memory,gpu_uuid) cat "$FAKE_DIR/apps" ;;
  *) echo "fake nvidia-smi: unexpected $1" >&2; exit 2 ;;
esac
`;

const PVEVERSION = `#!/bin/sh
echo pveversion "$@" >> "$FAKE_DIR/calls"
cat "$FAKE_DIR/pveversion"
`;

/** Two RTX A6000s, as `nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid,compute_cap --format=csv,noheader,nounits` prints them. */
export const TWO_A6000 = [
    "0, NVIDIA RTX A6000, 49140, 570.133.20, GPU-3f1c2a9e-0000-4b6e-9d1a-000000000000, 8.6",
    "1, NVIDIA RTX A6000, 49140, 570.133.20, GPU-3f1c2a9e-1111-4b6e-9d1a-111111111111, 8.6",
    "",
].join("\n");

/** /proc/devices of a Proxmox host with the NVIDIA driver loaded. */
export const PROC_DEVICES = [
    "Character devices:",
    "  1 mem",
    "  4 /dev/vc/0",
    "  5 /dev/tty",
    "195 nvidia-frontend",
    "226 drm",
    "508 nvidia-uvm",
    "509 nvidia-caps",
    "",
    "Block devices:",
    "  8 sd",
    "253 device-mapper",
    "",
].join("\n");

/** Where a test wants a command to fail: the first command matching `match` answers `result` instead of running. */
interface Failure {
    match: RegExp;
    result: ExecResult;
    /** How many more matching commands it answers. */
    times: number;
    /** Builds the answer from the command (answer()). */
    answer?: (command: string) => string;
}

/** The pool of the box's run: commands run in the box instead of over SSH. */
class BoxPool extends SshPool {
    constructor(private readonly box: ProviderBox) {
        super({ log: () => undefined });
    }

    override async exec(_target: SshTarget, command: string, opts: ExecOptions = {}): Promise<ExecResult> {
        return this.box.exec(command, opts);
    }
}

export class ProviderBox {
    readonly fake = new FakeBox();
    /** The command strings the providers sent, in order, as they would go over SSH. */
    readonly commands: string[] = [];
    /** What the providers said (progress and notices: `say` prints with console.log). */
    readonly said: string[] = [];
    readonly server: FakeSglang;
    /** The engine run the providers serve (its pool runs commands in the box); `newRun()` starts another. */
    run: ProviderRun;
    private failures: Failure[] = [];
    private savedLog: typeof console.log = console.log;

    private constructor(server: FakeSglang) {
        this.server = server;
        this.run = this.newRun();
        for (const dir of ["etc/pve/lxc", "etc/systemd/system", "run/lock/lxc", "proc"]) fs.mkdirSync(this.root(dir), { recursive: true });
        fs.writeFileSync(this.root("proc/devices"), PROC_DEVICES);
        const tools: Record<string, string> = {
            pct: PCT_EXEC,
            systemctl: SYSTEMCTL,
            "systemd-run": SYSTEMD_RUN,
            "nvidia-smi": NVIDIA_SMI,
            pveversion: PVEVERSION,
        };
        for (const [name, text] of Object.entries(tools)) fs.writeFileSync(this.fake.file(`bin/${name}`), text, { mode: 0o755 });
        fs.writeFileSync(this.fake.file("pct.py"), PCT_PY, { mode: 0o755 });
        this.fake.env.FAKE_SERVER_PID = String(process.pid);
        // The box's python3 (the /server_info read, the box-facts launcher): tests/host-python.ts.
        venvPython(this.fake.dir);
        fs.writeFileSync(this.fake.file("gpu-facts"), TWO_A6000);
        fs.writeFileSync(this.fake.file("pveversion"), "pve-manager/8.3.2/3e76eec21c4a14a7 (running kernel: 6.8.12-4-pve)\n");
        fs.writeFileSync(this.fake.file("gpus"), "0, GPU-0, 3\n1, GPU-1, 3\n");
        this.installSglang("0.5.11");
        this.write(`${MODEL}/config.json`, JSON.stringify(QWEN36_CONFIG, null, 2));
        this.write(`${MODEL}/model.safetensors.index.json`, JSON.stringify({ metadata: { total_size: 53_790_000_000 }, weight_map: {} }));
    }

    /**
     * A box, and a run whose pool runs the providers' commands in it. The
     * fake server listens `at` (default: a port of 127.0.0.1 the
     * system picks); the declared service's host and port are its
     * (declaredService).
     */
    static async open(at: FakeServerAddress = { host: "127.0.0.1", port: 0 }): Promise<ProviderBox> {
        const server = await FakeSglang.listen(at);
        const box = new ProviderBox(server);
        server.box = box;
        deployWith(API_KEY);
        box.savedLog = console.log;
        console.log = (...args: unknown[]) => {
            box.said.push(args.map(String).join(" "));
        };
        return box;
    }

    async close(): Promise<void> {
        console.log = this.savedLog;
        deployWith(null);
        await this.server.close();
        this.fake.destroy();
    }

    /**
     * A fresh engine run against this box (what the next `pulumi` command's
     * provider process would be), with a key in its config (the box's pool
     * never uses it, sshTarget needs one).
     */
    newRun(): ProviderRun {
        return new ProviderRun({
            pool: new BoxPool(this),
            config: { sshPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nunused by the box's pool\n-----END OPENSSH PRIVATE KEY-----\n" },
        });
    }

    /** A path of the box (`/etc/sglang/qwen.env`) in its directory. */
    root(boxPath = ""): string {
        return path.join(this.fake.dir, "root", boxPath);
    }

    /** A connection as index.ts builds it (the box's pool never connects to it). */
    connection(topology: "pct-exec" | "direct" = "pct-exec", vmid: number | undefined = topology === "pct-exec" ? 129 : undefined): Connection {
        return {
            address: "127.0.0.1",
            port: 22,
            user: "root",
            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
            topology,
            ...(vmid === undefined ? {} : { vmid }),
        };
    }

    /** The first command after this that matches answers `result` and does not run (a command that fails on the box). */
    failOn(match: RegExp, result: Partial<ExecResult> & { code: number }): void {
        this.failures.push({ match, result: { stdout: "", stderr: "", ...result }, times: 1 });
    }

    /**
     * Every later command matching `match` prints `stdout` and exits 0 without running (a box that answers garbage).
     * `stdout` may be built from the command (e.g. the sections of a batch script with its random marker: batchAnswer).
     */
    answer(match: RegExp, stdout: string | ((command: string) => string)): void {
        this.failures.push({ match, result: { code: 0, stdout: "", stderr: "" }, answer: typeof stdout === "string" ? () => stdout : stdout, times: Infinity });
    }

    async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
        this.commands.push(command);
        const failure = this.failures.find((f) => f.times > 0 && f.match.test(command));
        if (failure) {
            failure.times--;
            return { ...failure.result, ...(failure.answer ? { stdout: failure.answer(command) } : {}) };
        }
        const rooted = command.replace(BOX_PATH, (_m, before: string, p: string) => `${before}${path.join(this.fake.dir, "root")}${p}`);
        const result = await this.fake.run(["sh", "-c", rooted], opts.stdin === undefined ? {} : { stdin: opts.stdin });
        // As in a chroot: a path the box prints (a glob of the models root, the prune's listing) is the box's, not this machine's.
        const root = path.join(this.fake.dir, "root");
        return { ...result, stdout: result.stdout.split(root).join("") };
    }

    /** The calls the fake tools recorded (`pct set 129 -cores 16`, `systemctl start ...`). */
    calls(): string[] {
        return this.fake.calls();
    }

    /** Tool calls starting with `prefix`, e.g. "systemctl". */
    callsOf(prefix: string): string[] {
        return this.calls().filter((c) => c.startsWith(prefix));
    }

    write(boxPath: string, content: string | Buffer, mode = 0o644): void {
        fs.mkdirSync(path.dirname(this.root(boxPath)), { recursive: true });
        fs.writeFileSync(this.root(boxPath), content, { mode });
        fs.chmodSync(this.root(boxPath), mode);
    }

    remove(boxPath: string): void {
        fs.rmSync(this.root(boxPath), { recursive: true, force: true });
    }

    /** What `pct status <vmid>` says ("running" until set). */
    containerStatus(vmid: number, status: "running" | "stopped"): void {
        fs.writeFileSync(this.fake.file(`ct-${vmid}.status`), `${status}\n`);
    }

    read(boxPath: string): string | null {
        return fs.existsSync(this.root(boxPath)) ? fs.readFileSync(this.root(boxPath), "latin1") : null;
    }

    mode(boxPath: string): number {
        return fs.statSync(this.root(boxPath)).mode & 0o7777;
    }

    /**
     * The venv's python (service.python, /opt/sglang/venv/bin/python3) with
     * the package metadata of SGLang `version` installed, or none (null): what
     * the box facts read (importlib.metadata, never `import sglang`).
     */
    installSglang(version: string | null): void {
        // A venv as `python -m venv` lays it out: python finds its site-packages from pyvenv.cfg, even isolated (-I).
        const venv = this.root("opt/sglang/venv");
        const site = path.join(venv, `lib/python${HOST_PYTHON_VERSION}/site-packages`);
        fs.rmSync(venv, { recursive: true, force: true });
        fs.mkdirSync(site, { recursive: true });
        venvPython(venv);
        if (version !== null) {
            fs.mkdirSync(path.join(site, `sglang-${version}.dist-info`));
            fs.writeFileSync(path.join(site, `sglang-${version}.dist-info`, "METADATA"), `Metadata-Version: 2.1\nName: sglang\nVersion: ${version}\n`);
        }
    }

    /** A stopped server's GPU memory stays in use (a rank that does not exit). */
    gpuMemoryStuck(): void {
        fs.writeFileSync(this.fake.file("gpu-stuck"), "");
    }

    /** How the next starts of the unit go, in order ("ready", "crash", "refuse"); "ready" once the list runs out. */
    startsAs(...how: Array<"ready" | "crash" | "refuse">): void {
        fs.writeFileSync(this.fake.file("starts"), how.join("\n"));
    }

    /** A unit of the box as systemd has it: state, main PID, enabled. */
    unit(name: string): { active: string; sub: string; pid: number; enabled: boolean } | undefined {
        const file = this.fake.file("systemd.json");
        if (!fs.existsSync(file)) return undefined;
        return (JSON.parse(fs.readFileSync(file, "utf8")) as { units: Record<string, { active: string; sub: string; pid: number; enabled: boolean }> }).units[
            name
        ];
    }

    /** The unit, environment file and SGLang config file the running process was started from, or null before any start. */
    process(): { unit: string | null; env: string | null; config?: string | null } | null {
        const file = this.fake.file("process.json");
        return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as { unit: string | null; env: string | null; config?: string | null }) : null;
    }

    /**
     * Puts a server on the box as an earlier rollout left it: the unit and
     * environment file written, enabled and (re)started, so running from them.
     */
    async install(unitName: string, unitText: string, environmentFile?: string, serverConfigFile?: string): Promise<void> {
        const name = unitName.replace(/^sglang-/, "").replace(/\.service$/, "");
        this.write(`etc/systemd/system/${unitName}`, unitText, 0o644);
        if (environmentFile !== undefined) this.write(`etc/sglang/${name}.env`, environmentFile, 0o600);
        if (serverConfigFile !== undefined) this.write(`etc/sglang/${name}.yaml`, serverConfigFile, 0o600);
        for (const argv of [
            ["systemctl", "enable", unitName],
            ["systemctl", "stop", unitName],
            ["systemctl", "start", unitName],
        ]) {
            const r = await this.fake.run(argv);
            if (r.code !== 0) throw new Error(`install ${unitName}: ${argv.join(" ")}: ${r.stderr}`);
        }
        fs.writeFileSync(this.fake.file("calls"), "");
    }

    /** Tool calls and commands recorded so far are forgotten (the set-up's are not the test's). */
    forget(): void {
        this.commands.length = 0;
        this.said.length = 0;
        fs.writeFileSync(this.fake.file("calls"), "");
    }
}

/** What the fake server answers besides what its unit says. */
export interface ServerBehaviour {
    /** The chat completion's text. */
    chat: string;
    /** /server_info: as the process's args say, an object of the wrong shape, or not JSON at all. */
    info: "args" | "wrong-shape" | "not-json";
    /** /generate's meta_info for each of its 64 tokens with speculation: verify steps (35: an accept length of 1.83) and seconds (1.6: 40 tok/s). */
    generate: { verifyCount: number; e2eLatency: number };
}

/** Where the fake server listens: port 0 lets the system pick one. */
export interface FakeServerAddress {
    host: string;
    port: number;
}

/**
 * SGLang's HTTP API as the started process would answer: health while the
 * unit is active, the API key from its EnvironmentFile enforced on every path
 * but /health, /server_info from its ExecStart.
 */
export class FakeSglang {
    box: ProviderBox | undefined;
    behaviour: ServerBehaviour = { chat: "The capital of France is Paris.", info: "args", generate: { verifyCount: 35, e2eLatency: 1.6 } };
    readonly requests: Array<{ method: string; path: string; authorized: boolean }> = [];

    private constructor(
        private readonly srv: http.Server,
        readonly host: string,
        readonly port: number,
    ) {}

    static async listen(at: FakeServerAddress): Promise<FakeSglang> {
        // eslint-disable-next-line prefer-const -- assigned after the server that closes over it exists
        let fake: FakeSglang | undefined;
        const srv = http.createServer((req, res) => fake!.handle(req, res));
        await new Promise<void>((resolve, reject) => {
            srv.once("error", reject);
            srv.listen(at.port, at.host, () => {
                // Listening: a later error is the server's own again, not a failed listen.
                srv.off("error", reject);
                resolve();
            });
        });
        fake = new FakeSglang(srv, at.host, (srv.address() as net.AddressInfo).port);
        return fake;
    }

    close(): Promise<void> {
        this.srv.closeAllConnections();
        return new Promise((resolve) => this.srv.close(() => resolve()));
    }

    private running(): { words: string[]; apiKey: string | undefined } | null {
        const box = this.box;
        if (!box) return null;
        const state = path.join(box.fake.dir, "systemd.json");
        if (!fs.existsSync(state)) return null;
        const units = (JSON.parse(fs.readFileSync(state, "utf8")) as { units: Record<string, { active: string }> }).units;
        if (!Object.values(units).some((u) => u.active === "active")) return null;
        const proc = box.process();
        const lines = (proc?.unit ?? "").split("\n");
        const at = lines.findIndex((l) => l.startsWith("ExecStart="));
        let exec = "";
        for (let i = at; at >= 0 && i < lines.length; i++) {
            exec += ` ${lines[i]!.replace(/^ExecStart=/, "").replace(/\\$/, "")}`;
            if (!lines[i]!.endsWith("\\")) break;
        }
        const words = exec.trim().split(/\s+/);
        // As SGLang: the key is `api-key` of the YAML file `--config` names, read at start.
        const key = /^api-key: "(.*)"$/m.exec(proc?.config ?? "")?.[1];
        return { words, apiKey: words.includes("--config") && key ? key : undefined };
    }

    private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
        const p = new URL(req.url ?? "/", "http://fake").pathname;
        const send = (status: number, body?: unknown) => {
            const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
            res.writeHead(status, { "content-type": "application/json" });
            res.end(text);
        };
        req.resume();
        req.on("end", () => {
            const proc = this.running();
            const authorized = !proc?.apiKey || req.headers.authorization === `Bearer ${proc.apiKey}`;
            this.requests.push({ method: req.method ?? "", path: p, authorized });
            if (!proc) return send(503);
            if (p !== "/health" && !authorized) return send(401, { error: "Unauthorized" });
            switch (p) {
                case "/health":
                    return send(200);
                case "/v1/models":
                    return send(200, { object: "list", data: [{ id: flag(proc.words, "--served-model-name"), object: "model" }] });
                case "/v1/chat/completions":
                    return send(200, {
                        object: "chat.completion",
                        choices: [{ index: 0, message: { role: "assistant", content: this.behaviour.chat }, finish_reason: "stop" }],
                    });
                case "/generate": {
                    // The serving-quality gate's prompts: meta_info as SGLang's tokenizer manager reports it, 64 tokens in 1.6 s,
                    // with speculation 35 verify steps (an accept length of 1.83, as /server_info says), unless the test says otherwise.
                    const speculative = flag(proc.words, "--speculative-algorithm") !== undefined;
                    const { verifyCount, e2eLatency } = this.behaviour.generate;
                    return send(200, {
                        text: "...",
                        meta_info: { completion_tokens: 64, e2e_latency: e2eLatency, ...(speculative ? { spec_verify_ct: verifyCount } : {}) },
                    });
                }
                case "/server_info":
                    if (this.behaviour.info === "not-json") return send(200, "<html>502 Bad Gateway</html>");
                    if (this.behaviour.info === "wrong-shape") return send(200, { tp_size: "two", port: "thirty thousand" });
                    return send(200, serverInfoOf(proc.words));
                default:
                    return send(404, { detail: "Not Found" });
            }
        });
    }
}

function flag(words: string[], name: string): string | undefined {
    const at = words.indexOf(name);
    return at >= 0 ? words[at + 1] : undefined;
}

/** /server_info of SGLang 0.5.11 for a command line: its defaults filled in, NEXTN reported as EAGLE (SGLang rewrites it). */
function serverInfoOf(words: string[]): Record<string, unknown> {
    const num = (name: string, fallback: number | null) => {
        const v = flag(words, name);
        return v === undefined ? fallback : Number(v);
    };
    const algorithm = flag(words, "--speculative-algorithm") ?? null;
    return {
        model_path: flag(words, "--model-path"),
        served_model_name: flag(words, "--served-model-name"),
        tp_size: num("--tp-size", 1),
        host: flag(words, "--host") ?? "127.0.0.1",
        port: num("--port", 30000),
        mem_fraction_static: num("--mem-fraction-static", 0.871),
        max_running_requests: num("--max-running-requests", algorithm ? 48 : null),
        speculative_algorithm: algorithm === "NEXTN" ? "EAGLE" : algorithm,
        speculative_draft_model_path: flag(words, "--speculative-draft-model-path") ?? null,
        speculative_num_steps: num("--speculative-num-steps", null),
        speculative_eagle_topk: num("--speculative-eagle-topk", null),
        speculative_num_draft_tokens: num("--speculative-num-draft-tokens", null),
        mamba_scheduler_strategy: flag(words, "--mamba-scheduler-strategy") ?? "no_buffer",
        disable_radix_cache: words.includes("--disable-radix-cache"),
        api_key: "the server echoes its key here",
        internal_states: [algorithm ? { avg_spec_accept_length: 1.83 } : {}],
        version: "0.5.11",
    };
}

// ---------------------------------------------------------------------------
// The declared server, built as the components build the providers' inputs

/** A valid API key (16-256 characters of A-Za-z0-9._~+/=-). */
export const API_KEY = "sk-fake-box-0123456789abcdef0123";

/** This stack, as components/sglang-service.ts records it in the unit. */
export const SELF: UnitOwner = { project: "sglang-serve", stack: "lab" };

/**
 * The field's server (Qwen3.6-27B, TP 2, NEXTN) on the fake server's
 * loopback port, validated as the stack config is; `edit` changes the raw
 * service block first.
 */
export function declaredService(box: ProviderBox, edit: (raw: Record<string, unknown>) => void = () => undefined): ServiceConfig {
    const raw: Record<string, unknown> = {
        ...structuredClone(fieldConfig().service),
        listenHost: box.server.host,
        endpointHost: box.server.host,
        port: box.server.port,
    };
    edit(raw);
    return ServiceSchema.parse(raw);
}

/**
 * The readiness settings of the tests: validated, with a short poll interval
 * (the fake server is ready at once) and no healthy window.
 */
export function readinessSettings(edit: Record<string, unknown> = {}): ReadinessConfig {
    return ReadinessSchema.parse({ pollIntervalSeconds: 0.05, minHealthySeconds: 0, gpuReleaseTimeoutSeconds: 5, ...edit });
}

/**
 * The deploy run's API key (SGLANG_SERVE_API_KEY), as a deploy job gives it
 * to the providers (core/secrets/deploy-secrets.ts); null: a run without it (a
 * pull request's preview). ProviderBox.open sets API_KEY, close removes it.
 */
export function deployWith(apiKey: string | null): void {
    if (apiKey === null) delete process.env[API_KEY_VARIABLE];
    else process.env[API_KEY_VARIABLE] = apiKey;
}

export interface ServiceInputOptions {
    /** The API key; null for a server without one. Default API_KEY. */
    apiKey?: string | null;
    owner?: UnitOwner;
    readiness?: ReadinessConfig;
    connection?: Connection;
    /** With the box's expectations and the venv plan (expectBox, venv), as the component gives them: create and update read the box's facts and ask SGLang's verdict. */
    withBox?: boolean;
}

/** The box of the tests as the plan takes it (core/plan/server-plan.ts): the container's two RTX A6000s, numbered 0 and 1 inside it. */
export const PLAN_BOX: PlanBox = { gpuIndices: [0, 1], gpuMemoryMiB: 49140, gpuName: "NVIDIA RTX A6000" };

/**
 * The SglangService resource's inputs as components/sglang-service.ts gives
 * them: the server's plan (core/plan/server-plan.ts planServer) on PLAN_BOX,
 * `opts.apiKey` null planning the server without an API key; unless
 * `opts.withBox`, less the box's expectations and the venv plan (expectBox,
 * venv), which make create and update read the box's facts, run SGLang's own
 * verdict here and stage venvs: the fake box's model folder is a stand-in
 * that the release's own code refuses (a config.json of four layers), so only
 * the tests of those steps ask for them. Plus what the files on the box must hold with
 * `opts.apiKey` as the deploy's key (environmentFile, serverConfigFile,
 * apiKey: the provider itself takes them from the deploy run, deployWith,
 * and ignores these).
 */
export function serviceInputs(box: ProviderBox, service: ServiceConfig, opts: ServiceInputOptions = {}): ServiceProps {
    const apiKey = opts.apiKey === null ? undefined : (opts.apiKey ?? API_KEY);
    const hasApiKey = apiKey !== undefined;
    const plan = planServer({ ...service, requireApiKey: hasApiKey }, PLAN_BOX, opts.readiness ?? readinessSettings(), opts.owner ?? SELF);
    const { expectBox, venv, ...planned } = plan.service;
    return {
        providerVersion: PROVIDER_VERSION,
        connection: opts.connection ?? box.connection("pct-exec"),
        ...planned,
        ...(opts.withBox ? { expectBox, venv } : {}),
        ...(hasApiKey ? { ...renderSecretFiles({ apiKey, environment: {} }), apiKey } : {}),
    };
}

/** The field's model folder on the box (service.model.path), relative to the box's root. */
export const MODEL = "models/Qwen3.6-27B";

/** The parts of Qwen3.6-27B's config.json the box facts read: the architecture, the hybrid layers, the MTP head. */
export const QWEN36_CONFIG = {
    architectures: ["Qwen3_5ForConditionalGeneration"],
    model_type: "qwen3_5",
    text_config: {
        layer_types: ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        mtp_num_hidden_layers: 1,
        num_hidden_layers: 64,
    },
};

/** Container 129 on the Proxmox host, as the service's `pct exec` needs it. */
export const CONTAINER_CONF = "arch: amd64\ncores: 32\nhostname: llm-two\nmemory: 131072\nostype: debian\nswap: 0\n";

/** A batch script's output (core/batch-script.ts) for the sections given, with the marker the command carries. */
export function batchAnswer(sections: Record<string, string>): (command: string) => string {
    return (command) => {
        const marker = /sglang-serve-[0-9a-f]{16}/.exec(command)?.[0];
        if (!marker) throw new Error(`batchAnswer: no marker in ${command.slice(0, 200)}`);
        return Object.entries(sections)
            .map(([name, text]) => `${marker} ${name}\n${text}`)
            .join("");
    };
}
