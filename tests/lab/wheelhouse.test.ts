import assert from "node:assert/strict";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ensureWheelhouse } from "../../lab/sglang/venvs";
import { waitFor } from "./lab-fixture";

// The lab's wheelhouse (lab/sglang/venvs.ts ensureWheelhouse) when labs come
// up side by side on a machine that has none: pip is a stand-in here that
// writes a wheel naming the process that downloaded it, and can be held until
// a file appears, so the order of the two downloads is the test's.
const repo = path.resolve(__dirname, "..", "..");

describe("the lab's wheelhouse, made once for labs brought up side by side", function () {
    this.timeout(60_000);
    let dir: string;
    let releases: string;
    let python: string;

    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-wheelhouse-"));
        releases = path.join(dir, "releases");
        fs.mkdirSync(releases);
        python = path.join(dir, "python3");
        fs.writeFileSync(
            python,
            `#!/bin/sh
while [ "$1" != --dest ]; do shift; done
mkdir -p "$2"
touch "$2/downloaded-by-$PPID.whl"
if [ -n "\${HOLD_UNTIL:-}" ]; then while [ ! -e "$HOLD_UNTIL" ]; do sleep 0.05; done; fi
`,
            { mode: 0o755 },
        );
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** ensureWheelhouse in a process of its own, as a lab's `up` runs it. */
    const lab = (env: Record<string, string> = {}) =>
        spawn(
            process.execPath,
            [
                "--require",
                path.join(repo, "ts-hook.cjs"),
                "-e",
                `require(${JSON.stringify(path.join(repo, "lab/sglang/venvs.ts"))}).ensureWheelhouse(process.argv[1], () => {})`,
                releases,
            ],
            {
                env: { ...process.env, SGLANG_SERVE_PYTHON: python, ...env },
                stdio: ["ignore", "ignore", "pipe"],
            },
        );
    const wheels = () => fs.readdirSync(path.join(releases, "wheelhouse")).filter((f) => f.endsWith(".whl"));

    it("keeps the first finished wheelhouse: a lab that finishes its download later neither removes it nor fails", async () => {
        const hold = path.join(dir, "go");
        const late = lab({ HOLD_UNTIL: hold });
        let stderr = "";
        late.stderr.on("data", (d: Buffer) => (stderr += d));
        const exited = new Promise<number | null>((resolve) => late.on("exit", resolve));
        await waitFor("the late lab's download to begin", async () => (fs.existsSync(path.join(releases, `wheelhouse.tmp.${late.pid}`)) ? true : undefined));

        const first = spawnSync(process.execPath, late.spawnargs.slice(1), { env: { ...process.env, SGLANG_SERVE_PYTHON: python }, encoding: "utf8" });
        assert.equal(first.status, 0, first.stderr);
        const kept = wheels();
        assert.equal(kept.length, 1, kept.join(" "));

        fs.writeFileSync(hold, "");
        assert.equal(await exited, 0, stderr);
        assert.deepEqual(wheels(), kept);
        assert.deepEqual(
            fs.readdirSync(releases).filter((f) => f.startsWith("wheelhouse.tmp.")),
            [],
        );
    });

    it("four labs whose downloads end at once all come up, and one wheelhouse is left", async () => {
        const hold = path.join(dir, "go");
        const labs = [0, 1, 2, 3].map(() => lab({ HOLD_UNTIL: hold }));
        const stderr = labs.map(() => "");
        labs.forEach((p, i) => p.stderr!.on("data", (d: Buffer) => (stderr[i] += d)));
        const exits = labs.map((p) => new Promise<number | null>((resolve) => p.on("exit", resolve)));
        await waitFor("the four downloads to begin", async () =>
            labs.every((p) => fs.existsSync(path.join(releases, `wheelhouse.tmp.${p.pid}`))) ? true : undefined,
        );
        fs.writeFileSync(hold, "");
        assert.deepEqual(await Promise.all(exits), [0, 0, 0, 0], stderr.join("\n"));
        assert.equal(wheels().length, 1);
        assert.deepEqual(
            fs.readdirSync(releases).filter((f) => f.startsWith("wheelhouse.tmp.")),
            [],
        );
    });

    it("replaces a wheelhouse made for other requirements", () => {
        fs.mkdirSync(path.join(releases, "wheelhouse"));
        fs.writeFileSync(path.join(releases, "wheelhouse", ".requirements"), "sglang==0.5.22\n");
        fs.writeFileSync(path.join(releases, "wheelhouse", "sglang-0.5.22.whl"), "");
        const saved = process.env.SGLANG_SERVE_PYTHON;
        process.env.SGLANG_SERVE_PYTHON = python;
        try {
            ensureWheelhouse(releases, () => {});
        } finally {
            if (saved === undefined) delete process.env.SGLANG_SERVE_PYTHON;
            else process.env.SGLANG_SERVE_PYTHON = saved;
        }
        assert.deepEqual(wheels(), [`downloaded-by-${process.pid}.whl`]);
        assert.match(fs.readFileSync(path.join(releases, "wheelhouse", ".requirements"), "utf8"), /^sglang==0\.5\.23\n/);
    });
});
