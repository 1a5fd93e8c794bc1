import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { renderStack } from "../../scripts/render";
import { SystemdRoot } from "./fixtures";

const repo = path.join(__dirname, "..", "..");
const committedStackText = (stack: string) => fs.readFileSync(path.join(repo, `Pulumi.${stack}.yaml`), "utf8");
/** A committed field stack (they listen on 0.0.0.0 and require an API key, whose value only the deploy holds). */
const stackText = (stack: string) => committedStackText(stack);

/** `npm run render -- <args>` without npm: the same node command the npm script runs. */
function runRender(args: string[]): { status: number | null; stdout: string; stderr: string } {
    const run = spawnSync(process.execPath, ["--require", "./ts-hook.cjs", "scripts/render.ts", ...args], { cwd: repo, encoding: "utf8", timeout: 60000 });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The unit between its `### /etc/systemd/system/...` heading and the next `###`. */
function unitFromOutput(stdout: string): string {
    const match = /^### \/etc\/systemd\/system\/\S+ \([^\n]*\)\n([\s\S]*?)^###/m.exec(stdout);
    assert.ok(match, `no unit in the output:\n${stdout}`);
    return match[1].replace(/\n$/, "");
}

describe("render script", function () {
    this.timeout(120000);
    let root: SystemdRoot;
    before(() => {
        root = new SystemdRoot();
    });
    after(() => root.dispose());

    for (const stack of ["kpro5", "ct129"]) {
        it(`renders a unit for ${stack} that systemd-analyze verify accepts`, () => {
            const rendered = renderStack(stackText(stack), { project: "sglang-serve", stack });
            assert.equal(rendered.servers[0]!.unitPath, "/etc/systemd/system/sglang-qwen.service");
            const result = root.verify("sglang-qwen.service", rendered.servers[0]!.unitText, ["/opt/sglang/venv/bin/sglang"]);
            assert.equal(result.output, "");
            assert.equal(result.status, 0);
        });
    }

    it("npm run render -- --file <kpro5 with its key> prints the unit, which verifies", () => {
        const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sglang-render-")), "Pulumi.kpro5.yaml");
        fs.writeFileSync(file, stackText("kpro5"));
        const run = runRender(["--file", file]);
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
        assert.equal(run.status, 0, run.stderr);
        assert.match(run.stdout, /in container 129 \(llm-two\) on 10\.1\.2\.5, via pct exec/);
        const unit = unitFromOutput(run.stdout);
        assert.match(unit, /--speculative-algorithm NEXTN/);
        const result = root.verify("sglang-qwen.service", `${unit}\n`, ["/opt/sglang/venv/bin/sglang"]);
        assert.equal(result.output, "");
        assert.match(run.stderr, /placeholder key/);
    });

    describe("with a stack file of its own", () => {
        let dir: string;
        before(() => {
            dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-render-"));
        });
        after(() => fs.rmSync(dir, { recursive: true, force: true }));

        it("prints every config problem as one message and exits 2", () => {
            const file = path.join(dir, "Pulumi.bad.yaml");
            fs.writeFileSync(
                file,
                stackText("kpro5")
                    .replace("algorithm: NEXTN", "algorithm: MTP")
                    .replace("numDraftTokens: 2", "numDraftTokens: 3")
                    .replace("mambaSchedulerStrategy: extra_buffer", "mambaSchedulerStrategy: no_buffer"),
            );
            const run = runRender(["--file", file]);
            assert.equal(run.status, 2);
            assert.equal(run.stdout, "");
            assert.match(run.stderr, /^Invalid sglang-serve stack config \(2 problems\)/);
            assert.match(run.stderr, /sglang-serve:service\.speculative\.algorithm = "MTP"/);
            assert.match(run.stderr, /sglang-serve:service\.mambaSchedulerStrategy = "no_buffer"/);
        });

        it("refuses a stack on 0.0.0.0 that requires no API key", () => {
            const file = path.join(dir, "Pulumi.open.yaml");
            fs.writeFileSync(file, stackText("kpro5").replace("    requireApiKey: true\n", ""));
            const run = runRender(["--file", file]);
            assert.equal(run.status, 2);
            assert.match(run.stderr, /sglang-serve:service\.requireApiKey = false/);
            assert.match(run.stderr, /service\.allowUnauthenticated: true/);
        });

        it("refuses an API key stored as Pulumi config, encrypted or not, with the way out", () => {
            const file = path.join(dir, "Pulumi.secret.yaml");
            fs.writeFileSync(file, stackText("kpro5").replace(/^config:\n/m, "config:\n  sglang-serve:apiKey:\n    secure: v1:AAAABBBBCCCC:ZZZZ\n"));
            const run = runRender(["--file", file]);
            assert.equal(run.status, 2);
            assert.match(run.stderr, /sglang-serve:apiKey = \[secret\]\n.*pulumi config rm sglang-serve:apiKey/);
        });

        it("records the stack in the unit as a deploy does: the project Pulumi.yaml names and the stack the file's name says", () => {
            const run = runRender(["--stack", "kpro5"]);
            assert.equal(run.status, 0, run.stderr);
            assert.match(unitFromOutput(run.stdout), /^# sglang-serve owner: sglang-serve\/kpro5$/m);
            const file = path.join(dir, "kpro5.yaml");
            fs.writeFileSync(file, stackText("kpro5"));
            const unnamed = runRender(["--file", file]);
            assert.equal(unnamed.status, 2);
            assert.match(unnamed.stderr, /kpro5\.yaml is not named Pulumi\.<stack>\.yaml/);
        });

        it("renders the committed kpro5 with the key's --config file and the EnvironmentFile, secrets masked", () => {
            const run = runRender(["--stack", "kpro5"]);
            assert.equal(run.status, 0, run.stderr);
            assert.match(run.stdout, /EnvironmentFile=\/etc\/sglang\/qwen\.env/);
            assert.match(run.stdout, /--config \/etc\/sglang\/qwen\.yaml/);
            assert.doesNotMatch(run.stdout, /--api-key/);
            assert.match(run.stdout, /### \/etc\/sglang\/qwen\.env \(mode 0600, secrets masked\)\n[^\n]*\nSGLANG_API_KEY=\[secret\]\n/);
            assert.doesNotMatch(run.stdout, /0123456789abcdef/);
        });
    });
});
