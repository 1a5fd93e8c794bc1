import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ServiceSchema } from "../../core/config/schema";
import { VerdictRequest, verdictRequest } from "../../core/sglang/verdict";
import { renderUnit } from "../../core/unit/systemd-unit";
import { fixtureModelPath } from "../../lab/sglang/fixtures";
import { releaseVerdict } from "../../providers/sglang-server/verdict";
import { ensureInstalled, keepOracles, OracleOptions, releaseCacheRoot, runOracle } from "../../sglang-release/oracle";
import { fieldConfig } from "../core/fixtures";

// Issue 34 finding 1: the preview's verdict runs the declared release's code
// and pip on the runner. Here the interpreter they run under
// (SGLANG_SERVE_PYTHON, the seam install.sh and oracle.ts spawn through) is a
// Python probe: it writes down its own environment (os.environ and
// /proc/self/environ) and then does what it was asked as a tiny stand-in: the
// interpreter check, `pip install --target` of small wheels with a real
// RECORD, or oracle.py's one result per case.

const PLANTED = {
    SSH_AUTH_SOCK: "/tmp/ssh-planted/agent.1",
    AWS_SECRET_ACCESS_KEY: "planted-aws-secret",
    PULUMI_CONFIG_PASSPHRASE: "planted-passphrase",
};

const PROBE = (python: string, dumps: string) => `#!${python} -I
import base64, hashlib, json, os, sys

dumps = ${JSON.stringify(dumps)}
with open(os.path.join(dumps, f"{os.getpid()}-{len(os.listdir(dumps))}.json"), "w") as f:
    with open("/proc/self/environ", "rb") as proc:
        initial = proc.read().decode("utf-8", "replace").split("\\0")
    json.dump({"argv": sys.argv[1:], "environ": dict(os.environ), "proc": initial}, f)

args = sys.argv[1:]
if args[:1] == ["-c"]:
    sys.exit(0)  # install.sh asks whether this is CPython 3.11
if args[:2] == ["-m", "pip"]:
    target = args[args.index("--target") + 1]
    for req in (a for a in args[2:] if "==" in a and not a.startswith("-")):
        name, version = req.split("==")
        module, info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
        files = {f"{module}/__init__.py": f"VERSION = {version!r}\\n".encode(), f"{info}/METADATA": f"Name: {name}\\nVersion: {version}\\n".encode()}
        lines = []
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            with open(os.path.join(target, rel), "wb") as out:
                out.write(data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{rel},sha256={digest},{len(data)}")
        with open(os.path.join(target, info, "RECORD"), "w") as out:
            out.write("\\n".join(lines + [f"{info}/RECORD,,"]) + "\\n")
    sys.exit(0)
for line in sys.stdin:  # oracle.py --version V --serve: a batch header, then one result per case
    case = json.loads(line) if line.strip() else {}
    if "argv" not in case:
        continue
    if case["argv"] == ["--probe-exit"]:
        sys.exit("probe: asked to exit")
    print(json.dumps({"status": "ok", "exitCode": 0, "exceptionType": None, "message": None, "stdout": "", "stderr": "", "logs": [],
                      "serverArgs": {}, "serverInfo": None, "serverInfoSimulated": None, "launcher": "http", "stubsTouched": [],
                      "probePid": os.getpid(), "probeArgv": case["argv"]}), flush=True)
`;

interface Dump {
    argv: string[];
    environ: Record<string, string>;
    proc: string[];
}

function request(): VerdictRequest {
    const service = ServiceSchema.parse(structuredClone(fieldConfig().service));
    const r = verdictRequest({
        version: service.sglangVersion,
        unitText: renderUnit(service, { hasSecrets: false, hasSecretEnvironment: false, owner: { project: "sglang-serve", stack: "test" } }),
        gpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
        modelConfigJson: fs.readFileSync(path.join(fixtureModelPath("qwen3.6-27b"), "config.json"), "utf8"),
    });
    assert.ok(!("unavailable" in r), JSON.stringify(r));
    return r;
}

describe("the preview's verdict runs the release's code and pip without the runner's keys, from a checked cache", function () {
    this.timeout(60_000);
    let dir: string;
    let dumps: string;
    const names = ["SGLANG_SERVE_CACHE", "SGLANG_SERVE_PYTHON", ...Object.keys(PLANTED)];
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
    let logged: string[];
    const log = console.log;

    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-verdict-env-"));
        dumps = path.join(dir, "dumps");
        fs.mkdirSync(dumps);
        const python = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).stdout.trim();
        assert.ok(path.isAbsolute(python), `python3's sys.executable: ${python}`);
        fs.writeFileSync(path.join(dir, "python"), PROBE(python, dumps), { mode: 0o755 });
        Object.assign(process.env, PLANTED, { SGLANG_SERVE_CACHE: path.join(dir, "cache"), SGLANG_SERVE_PYTHON: path.join(dir, "python") });
        logged = [];
        console.log = (...a: unknown[]) => logged.push(a.join(" "));
    });

    afterEach(() => {
        console.log = log;
        for (const n of names) {
            if (saved[n] === undefined) delete process.env[n];
            else process.env[n] = saved[n];
        }
        fs.rmSync(dir, { recursive: true, force: true });
    });

    /** What the probe wrote, oldest first. */
    const ran = (): Dump[] =>
        fs
            .readdirSync(dumps)
            .sort((a, b) => Number(a.split("-")[1]!.split(".")[0]) - Number(b.split("-")[1]!.split(".")[0]))
            .map((f) => JSON.parse(fs.readFileSync(path.join(dumps, f), "utf8")) as Dump);
    const isPip = (d: Dump) => d.argv[0] === "-m" && d.argv[1] === "pip";
    const isOracle = (d: Dump) => d.argv[0]?.endsWith("oracle.py") === true;

    it("pip and the release's code see none of the agent, the cloud credential and the state's passphrase planted in the runner's environment", async () => {
        const verdict = await releaseVerdict(request(), "[test]");
        assert.equal(verdict.status, "ok");
        const dumped = ran();
        assert.ok(dumped.some(isPip), "pip ran (the release was not cached)");
        assert.ok(dumped.some(isOracle), "the release's code ran");
        for (const d of dumped) {
            const what = d.argv.slice(0, 2).join(" ");
            assert.deepEqual(
                Object.keys(PLANTED).filter((n) => n in d.environ),
                [],
                `${what}: os.environ`,
            );
            const leaked = d.proc.filter((kv) => Object.values(PLANTED).some((v) => kv.includes(v)));
            assert.deepEqual(leaked, [], `${what}: /proc/self/environ`);
            assert.equal(d.environ.SGLANG_SERVE_CACHE, path.join(dir, "cache"), `${what} finds the cache root`);
            assert.ok(d.environ.PATH, `${what} has PATH`);
        }
    });

    it("a .pth planted in the shared deps' site is never run: the release's code is refused, naming the file, until a rebuild removes it", async () => {
        const cached = await ensureInstalled(["0.5.11"]);
        assert.deepEqual(cached, []);
        const planted = path.join(releaseCacheRoot(), "deps", "site", "zz-planted.pth");
        fs.writeFileSync(planted, "import os; os.system('id')\n");
        const before = ran().length;

        await assert.rejects(runOracle("0.5.11", [{ argv: [], entry: "sglang-serve" }]), /zz-planted\.pth is in no installed distribution's RECORD/);
        assert.equal(ran().filter(isOracle).length, ran().slice(0, before).filter(isOracle).length, "the release's code did not run");

        const rebuilt = await ensureInstalled(["0.5.11"]);
        assert.equal(rebuilt.length, 1, rebuilt.join("\n"));
        assert.match(rebuilt[0]!, /deps\/site failed its RECORD check: zz-planted\.pth is in no installed distribution's RECORD/);
        assert.ok(!fs.existsSync(planted), "the rebuilt site has no .pth");
        assert.ok(ran().slice(before).some(isPip), "pip installed the site again");
        const [result] = await runOracle("0.5.11", [{ argv: [], entry: "sglang-serve" }]);
        assert.equal(result!.status, "ok");
    });

    it("an edited module in the release's site: the preview's verdict rebuilds the site before it runs the release, and says so", async () => {
        await ensureInstalled(["0.5.11"]);
        const module = path.join(releaseCacheRoot(), "0.5.11", "site", "sglang", "__init__.py");
        const original = fs.readFileSync(module, "utf8");
        fs.appendFileSync(module, "import os; os.system('id')\n");
        const before = ran().length;

        const verdict = await releaseVerdict(request(), "[test]");
        assert.equal(verdict.status, "ok");
        assert.equal(fs.readFileSync(module, "utf8"), original, "the module is the wheel's again");
        const after = ran().slice(before);
        const firstOracle = after.findIndex(isOracle);
        assert.ok(firstOracle > 0 && after.slice(0, firstOracle).some(isPip), "pip rebuilt the site before the release's code ran");
        assert.ok(
            logged.some((l) =>
                /\[test\] rebuilt .*0\.5\.11\/site failed its RECORD check: sglang\/__init__\.py differs from the sha256 its RECORD gives/.test(l),
            ),
            logged.join("\n"),
        );
    });
    it("calls made together, or while the release's process waits for the next, share one run of its code, each answered in order; a call after it closed runs it again; one that dies fails its calls with its stderr", async () => {
        await ensureInstalled(["0.5.11"]);
        const before = ran().filter(isOracle).length;
        type Probed = { probePid: number; probeArgv: string[] };
        const ask = async (names: string[], opts: OracleOptions = {}) =>
            (await runOracle(
                "0.5.11",
                names.map((n) => ({ argv: [n], entry: "sglang-serve" as const })),
                opts,
            )) as unknown as Probed[];
        const together = await Promise.all([ask(["a", "b"]), ask(["c"]), ask(["d", "e", "f"])]);
        assert.deepEqual(
            together.map((batch) => batch.map((r) => r.probeArgv[0])),
            [["a", "b"], ["c"], ["d", "e", "f"]],
        );
        const pid = together[0]![0]!.probePid;
        assert.deepEqual(new Set(together.flat().map((r) => r.probePid)), new Set([pid]), "one process answered them all");

        // The next call comes after the others were answered, within the linger: the same process; it closes right after this one.
        const [next] = await ask(["g"], { lingerMs: 0 });
        assert.equal(next!.probePid, pid);
        const [later] = await ask(["h"]);
        assert.notEqual(later!.probePid, pid, "a call after the process closed runs the release again");
        assert.equal(ran().filter(isOracle).length, before + 2);

        const [dying, alongside] = await Promise.allSettled([ask(["i", "--probe-exit"]), ask(["j"])]);
        for (const r of [dying, alongside]) {
            assert.equal(r!.status, "rejected");
            assert.match(
                String((r as PromiseRejectedResult).reason),
                /oracle\.py --version 0\.5\.11 failed \(exit 1\) after 1 result\(s\) of the batch:\nprobe: asked to exit/,
            );
        }
        assert.equal((await ask(["k"]))[0]!.probeArgv[0], "k", "the next call runs a new process");
    });

    it("inside keepOracles a release's process waits for the next call past any linger; the scope's end closes it, once a call in flight is answered", async () => {
        await ensureInstalled(["0.5.11"]);
        const ask = async (name: string, opts: OracleOptions = {}) =>
            ((await runOracle("0.5.11", [{ argv: [name], entry: "sglang-serve" }], opts)) as unknown as { probePid: number }[])[0]!.probePid;
        /** Whether process `pid` is gone within 30 s (a liveness deadline: it ends when its stdin does). */
        const ended = async (pid: number): Promise<boolean> => {
            for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
                try {
                    process.kill(pid, 0);
                } catch {
                    return true;
                }
            }
            return false;
        };
        const endScope = keepOracles();
        const pid = await ask("a", { lingerMs: 0 });
        assert.equal(await ask("b", { lingerMs: 0 }), pid, "a linger of 0 inside the scope still waits for the next call");
        // The scope ends while a call is in flight: that call is answered by the same process, which then closes.
        const inFlight = ask("c");
        endScope();
        assert.equal(await inFlight, pid);
        assert.ok(await ended(pid), `the process (pid ${pid}) ends once the call in flight is answered`);
        const after = await ask("d", { lingerMs: 0 });
        assert.notEqual(after, pid, "a call after the scope ended runs the release again");

        // Nested scopes: the processes wait until the last one ends, and ending one twice does not end the other.
        const outer = keepOracles();
        const inner = keepOracles();
        const kept = await ask("e", { lingerMs: 0 });
        assert.notEqual(kept, after, "the call before closed its process (linger 0)");
        inner();
        inner();
        assert.equal(await ask("f", { lingerMs: 0 }), kept, "the outer scope still keeps the process");
        outer();
        assert.ok(await ended(kept), `the idle process (pid ${kept}) ends at the last scope's end`);
        assert.notEqual(await ask("g", { lingerMs: 0 }), kept, "the last scope's end closed the idle process");
    });
});
