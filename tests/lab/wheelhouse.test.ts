import assert from "node:assert/strict";
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
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

    /** ensureWheelhouse in a process of its own, as a lab's `up` runs it: its pid at once; its exit code and stderr once it ends. */
    const lab = (env: Record<string, string> = {}) => {
        const child = spawn(
            process.execPath,
            [
                "--require",
                path.join(repo, "ts-hook.cjs"),
                "-e",
                `require(${JSON.stringify(path.join(repo, "lab/sglang/venvs.ts"))}).ensureWheelhouse(process.argv[1], () => {})`,
                releases,
            ],
            { env: { ...process.env, SGLANG_SERVE_PYTHON: python, ...env }, stdio: ["ignore", "ignore", "pipe"] },
        );
        let stderr = "";
        child.stderr!.on("data", (d: Buffer) => (stderr += d));
        const ended = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on("close", (code) => resolve({ code, stderr })));
        return { pid: child.pid!, ended };
    };
    const downloading = (pid: number) => fs.existsSync(path.join(releases, `wheelhouse.tmp.${pid}`));
    const wheels = () => fs.readdirSync(path.join(releases, "wheelhouse")).filter((f) => f.endsWith(".whl"));
    const downloadFoldersLeft = () => fs.readdirSync(releases).filter((f) => f.startsWith("wheelhouse.tmp."));

    it("keeps the first finished wheelhouse: a lab that finishes its download later neither removes it nor fails", async () => {
        const hold = path.join(dir, "go");
        const late = lab({ HOLD_UNTIL: hold });
        await waitFor("the late lab's download to begin", async () => (downloading(late.pid) ? true : undefined));

        const first = await lab().ended;
        assert.equal(first.code, 0, first.stderr);
        const kept = wheels();
        assert.equal(kept.length, 1, kept.join(" "));

        fs.writeFileSync(hold, "");
        const later = await late.ended;
        assert.equal(later.code, 0, later.stderr);
        assert.deepEqual(wheels(), kept);
        assert.deepEqual(downloadFoldersLeft(), []);
    });

    it("four labs whose downloads end at once all come up, and one wheelhouse is left", async () => {
        const hold = path.join(dir, "go");
        const labs = [0, 1, 2, 3].map(() => lab({ HOLD_UNTIL: hold }));
        await waitFor("the four downloads to begin", async () => (labs.every((l) => downloading(l.pid)) ? true : undefined));
        fs.writeFileSync(hold, "");
        const ended = await Promise.all(labs.map((l) => l.ended));
        assert.deepEqual(
            ended.map((e) => e.code),
            [0, 0, 0, 0],
            ended.map((e) => e.stderr).join("\n"),
        );
        assert.equal(wheels().length, 1);
        assert.deepEqual(downloadFoldersLeft(), []);
    });

    it("replaces a wheelhouse made for other requirements", async () => {
        fs.mkdirSync(path.join(releases, "wheelhouse"));
        fs.writeFileSync(path.join(releases, "wheelhouse", ".requirements"), "sglang==0.5.22\n");
        fs.writeFileSync(path.join(releases, "wheelhouse", "sglang-0.5.22.whl"), "");
        const replacing = lab();
        const r = await replacing.ended;
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(wheels(), [`downloaded-by-${replacing.pid}.whl`]);
        assert.match(fs.readFileSync(path.join(releases, "wheelhouse", ".requirements"), "utf8"), /^sglang==0\.5\.23\n/);
    });
});
