import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { renderStack } from "../../scripts/render";
import { SystemdRoot } from "./fixtures";

const repo = path.join(__dirname, "..", "..");
const committedStackText = (stack: string) => fs.readFileSync(path.join(repo, `Pulumi.${stack}.yaml`), "utf8");
/** A committed field stack with its API key set, encrypted, as an operator sets it (the field stacks listen on 0.0.0.0). */
const stackText = (stack: string) => committedStackText(stack).replace(/^config:\n/m, "config:\n  sglang-serve:apiKey:\n    secure: v1:AAAABBBBCCCC:ZZZZ\n");

/** `npm run render -- <args>` without npm: the same node command the npm script runs. */
function runRender(args: string[]): { status: number | null; stdout: string; stderr: string } {
    const run = spawnSync(process.execPath, ["--require", "tsx/cjs", "scripts/render.ts", ...args], { cwd: repo, encoding: "utf8", timeout: 60000 });
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
            const rendered = renderStack(stackText(stack));
            assert.equal(rendered.unitPath, "/etc/systemd/system/sglang-qwen.service");
            const result = root.verify("sglang-qwen.service", rendered.unitText, ["/opt/sglang/venv/bin/sglang"]);
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

        it("refuses the committed kpro5, which listens on 0.0.0.0, until its API key is set", () => {
            const run = runRender(["--stack", "kpro5"]);
            assert.equal(run.status, 2);
            assert.match(run.stderr, /sglang-serve:apiKey = \(not set\)/);
            assert.match(run.stderr, /service\.allowUnauthenticated: true/);
        });

        it("masks an encrypted API key and adds the EnvironmentFile", () => {
            const file = path.join(dir, "Pulumi.secret.yaml");
            fs.writeFileSync(file, stackText("kpro5"));
            const run = runRender(["--file", file]);
            assert.equal(run.status, 0, run.stderr);
            assert.match(run.stdout, /EnvironmentFile=\/etc\/sglang\/qwen\.env/);
            assert.match(run.stdout, /--api-key \$\{SGLANG_API_KEY\}/);
            assert.match(run.stdout, /### \/etc\/sglang\/qwen\.env \(mode 0600, secrets masked\)\n[^\n]*\nSGLANG_API_KEY=\[secret\]\n/);
            assert.doesNotMatch(run.stdout, /0123456789abcdef/);
        });
    });
});
