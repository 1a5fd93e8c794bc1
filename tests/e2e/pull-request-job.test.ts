import * as assert from "node:assert/strict";
import { execFileSync, spawn } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { labDown, sshArgv } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { labPaths } from "../../lab/lab-info";
import { Deployment, EngineResult, expectExit } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { startAgent, TestAgent } from "../remote/ssh-agent-fixture";
import { mainPid, onBox, startLab, UNIT } from "./lab-box";

// Issue 19, finding 1, on the lab with the real engine: a deploy job (the
// deploy key in an ssh-agent, the API key in SGLANG_SERVE_API_KEY, nothing
// secret in Pulumi config), then a pull request's job with exactly what
// preview.yml gives it: the checkout, the read-only key in an ssh-agent, the
// repository's passphrase, and the state backend mounted read-only. It
// previews and checks drift; it cannot bring out the deploy key or the API
// key, and cannot change the state. Its own lab on 127.0.126.x.

const API_KEY = "e2e-prjob-api-key-0123456789abcdef";
const repo = path.resolve(__dirname, "..", "..");

/** `argv` with `input` on stdin and `env`, as a shell would run it. */
function run(argv: string[], opts: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {}): Promise<EngineResult> {
    return new Promise((resolve, reject) => {
        const child = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: opts.env ?? process.env, cwd: opts.cwd });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d));
        child.stderr.on("data", (d: Buffer) => (stderr += d));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr, output: stdout + stderr }));
        child.stdin.end(opts.input ?? "");
    });
}

/** Every file under `dir` with its content's hash: the state backend as a whole. */
function tree(dir: string): Record<string, string> {
    const out: Record<string, string> = {};
    const walk = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) walk(p);
            else out[path.relative(dir, p)] = createHash("sha256").update(fs.readFileSync(p)).digest("hex");
        }
    };
    walk(dir);
    return out;
}

/** Every file's text under `dir`, joined. */
function allText(dir: string): string {
    return Object.keys(tree(dir))
        .map((f) => fs.readFileSync(path.join(dir, f), "utf8"))
        .join("\n");
}

describe("a pull request's job (preview.yml) on the lab: preview and drift work, no secret comes out, the state stays as it was", function () {
    this.timeout(900_000);
    let labDir: string;
    let info: LabInfo;
    let d: Deployment;
    let config: StackConfigFile;
    let keyDir: string;
    let readKey: string;
    const agents: TestAgent[] = [];
    let backend: string;

    /**
     * `argv` as the pull request's job runs it: the backend mounted read-only
     * (a mount namespace of its own: root ignores file modes), the job's
     * environment (no API key, only the read key's agent).
     */
    function asPullRequest(argv: string[], cwd: string): Promise<EngineResult> {
        const script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"';
        return run(["unshare", "-m", "sh", "-c", script, "sh", backend, ...argv], { env: d.env(), cwd });
    }

    before(async () => {
        ({ labDir, info } = await startLab("prjob", 126));
        keyDir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-prjob-"));
        // The deploy job: the deploy key only in an ssh-agent, the API key only in the job's environment.
        config = labStackConfig(info, "pct-exec");
        const host = { ...config["sglang-serve:host"] };
        const deployKey = String(host.sshPrivateKeyPath);
        delete host.sshPrivateKeyPath;
        config["sglang-serve:host"] = host;
        d = await Deployment.create("lab", config);
        const deployAgent = startAgent(path.join(keyDir, "deploy.sock"), deployKey);
        agents.push(deployAgent);
        d.engineEnv.SSH_AUTH_SOCK = deployAgent.sock;
        d.giveApiKey(API_KEY);
        expectExit(await d.up(), 0, "up as the deploy job");
        backend = path.join(d.dir, ".state", "backend");

        // The read-only key, installed behind the gate as docs/operator-guide.md says.
        readKey = path.join(keyDir, "sglang-serve-read-lab");
        execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "sglang-serve-read-lab", "-f", readKey], { stdio: "ignore" });
        const script = await d.npmScript("read-gate", [
            "install-script",
            "--vmid",
            "129",
            "--python",
            String(config["sglang-serve:service"].python),
            "--model",
            String((config["sglang-serve:service"].model as { path: string }).path),
            "--public-key",
            `${readKey}.pub`,
            "--authorized-keys",
            labPaths(labDir).authorizedKeys,
        ]);
        expectExit(script, 0, "read-gate install-script");
        const installed = await run(sshArgv(info, "host", "sh"), { input: script.stdout });
        expectExit(installed, 0, "installing the gate");

        // From here on: the pull request's job. No API key, the read key alone in its agent.
        delete d.engineEnv.SGLANG_SERVE_API_KEY;
        const readAgent = startAgent(path.join(keyDir, "read.sock"), readKey);
        agents.push(readAgent);
        d.engineEnv.SSH_AUTH_SOCK = readAgent.sock;
    });
    after(async () => {
        for (const agent of agents) agent.stop();
        d?.cleanup();
        if (keyDir) fs.rmSync(keyDir, { recursive: true, force: true });
        if (labDir) await labDown(labDir);
        delete process.env.SGLANG_LAB_DIR;
    });

    it("holds no secret in the stack file, and none in the state, not even encrypted", () => {
        const stackFile = fs.readFileSync(path.join(d.dir, "Pulumi.lab.yaml"), "utf8");
        assert.doesNotMatch(stackFile, /secure:|sshPrivateKey|apiKey/);
        const state = allText(backend);
        assert.ok(!state.includes(API_KEY), "the API key is in the backend");
        assert.doesNotMatch(state, /"ciphertext"|1b47061264138c4ac30d75fd1eb44270/, "the backend holds an encrypted value");
        const keyBody = fs.readFileSync(String(labStackConfig(info, "pct-exec")["sglang-serve:host"].sshPrivateKeyPath), "utf8").split("\n")[2]!;
        assert.ok(keyBody.length > 20 && !state.includes(keyBody), "the deploy key is in the backend");
    });

    it("previews with --refresh against the read-only backend: passes, nothing to change, no refusal from the gate", async () => {
        const before = tree(backend);
        const r = await asPullRequest(
            [path.join(repo, "scripts", "pulumi.sh"), "preview", "--refresh", "--diff", "--expect-no-changes", "--stack", "lab", "--non-interactive"],
            repo,
        );
        expectExit(r, 0, "preview --refresh as the pull request's job");
        assert.doesNotMatch(r.output, /refused/);
        assert.deepEqual(tree(backend), before, "the state changed");
    });

    it("checks drift against the read-only backend: clean, and the state unchanged", async () => {
        const before = tree(backend);
        const r = await asPullRequest(["npm", "run", "-s", "drift", "--", "--stack", "lab", "--json"], repo);
        expectExit(r, 0, "npm run drift as the pull request's job");
        assert.equal((JSON.parse(r.stdout) as { drift: boolean }).drift, false, r.stdout);
        assert.deepEqual(tree(backend), before, "the state changed");
    });

    it("cannot bring out the API key or the deploy key: stack export --show-secrets and config show neither", async () => {
        const exported = await asPullRequest(
            [path.join(repo, "scripts", "pulumi.sh"), "stack", "export", "--show-secrets", "--stack", "lab", "--non-interactive"],
            repo,
        );
        expectExit(exported, 0, "stack export --show-secrets");
        assert.ok(!exported.output.includes(API_KEY), "the API key came out of the state");
        assert.doesNotMatch(exported.stdout, /PRIVATE KEY/);
        const shown = await asPullRequest(
            [path.join(repo, "scripts", "pulumi.sh"), "config", "--show-secrets", "--json", "--stack", "lab", "--non-interactive"],
            repo,
        );
        expectExit(shown, 0, "config --show-secrets");
        assert.ok(!shown.output.includes(API_KEY));
        assert.doesNotMatch(shown.stdout, /PRIVATE KEY|"secret": true/);
    });

    it("cannot change the state or the box: its up fails, the server and the backend stay as they were", async () => {
        const before = tree(backend);
        const pid = await mainPid(labDir);
        config["sglang-serve:service"].memFractionStatic = 0.85;
        d.writeConfig(config);
        try {
            const r = await asPullRequest(
                [path.join(repo, "scripts", "pulumi.sh"), "up", "--yes", "--skip-preview", "--stack", "lab", "--non-interactive"],
                repo,
            );
            assert.notEqual(r.code, 0, `up as the pull request's job must fail:\n${r.output.slice(-2000)}`);
        } finally {
            config["sglang-serve:service"].memFractionStatic = 0.88;
            d.writeConfig(config);
        }
        assert.deepEqual(tree(backend), before, "the state changed");
        assert.equal(await mainPid(labDir), pid);
        assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
    });
});
