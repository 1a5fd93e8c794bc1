// A "remote" that is this machine: commands run locally through the real
// shell, with fake systemctl, journalctl and nvidia-smi first on PATH, whose
// answers the test sets in files. So the readiness wait's and the GPU wait's real shell
// scripts run (quoting, sentinels, cursors) without SSH or a GPU.

import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import type { UnitStatus } from "../../core/readiness/readiness";
import type { RemoteRunner } from "../../remote/remote-host";
import { rootOnlyTempDir } from "../root-only-dir";
import type { ExecOptions, ExecResult } from "../../remote/ssh-target";

const FAKES: Record<string, string> = {
    // Prints the unit file; records its arguments.
    systemctl: `#!/bin/sh
echo "systemctl $*" >> "$FAKE_DIR/calls"
cat "$FAKE_DIR/unit"
`,
    // The journal is one entry per line of $FAKE_DIR/journal; the cursor of
    // entry N is "c=N". --since starts at the beginning (the fake journal starts
    // at the restart).
    journalctl: `#!/bin/sh
echo "journalctl $*" >> "$FAKE_DIR/calls"
J="$FAKE_DIR/journal"
after=0; count=""; show=0
while [ $# -gt 0 ]; do
  case "$1" in
    --after-cursor=*) after="\${1#--after-cursor=c=}" ;;
    --since=*) after=0 ;;
    -n) shift; count="$1" ;;
    --show-cursor) show=1 ;;
  esac
  shift
done
total=$(wc -l < "$J")
if [ -n "$count" ]; then start=$((total - count)); [ "$start" -lt 0 ] && start=0; else start=$after; fi
tail -n +$((start + 1)) "$J"
if [ "$show" = 1 ] && [ "$total" -gt "$start" ]; then echo "-- cursor: c=$total"; fi
exit 0
`,
    "nvidia-smi": `#!/bin/sh
echo "nvidia-smi $*" >> "$FAKE_DIR/calls"
[ -e "$FAKE_DIR/nvidia-smi-broken" ] && { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." ; exit 9; }
case "$1" in
  --query-gpu=index,uuid,memory.used) cat "$FAKE_DIR/gpus" ;;
  --query-compute-apps=pid,used_memory,gpu_uuid) cat "$FAKE_DIR/apps" ;;
  *) echo "fake nvidia-smi: unexpected $1" >&2; exit 2 ;;
esac
`,
};

export class FakeBox implements RemoteRunner {
    readonly dir: string;
    runs: string[][] = [];
    /** More environment for the fake tools (provider-box.ts: FAKE_SERVER_PID). */
    readonly env: Record<string, string> = {};

    constructor() {
        // Root's alone on the whole path: the box-facts read runs the venv's python only there.
        this.dir = rootOnlyTempDir("sglang-serve-fakebox-");
        fs.mkdirSync(path.join(this.dir, "bin"));
        for (const [name, script] of Object.entries(FAKES)) {
            fs.writeFileSync(path.join(this.dir, "bin", name), script, { mode: 0o755 });
        }
        this.setUnit({ activeState: "active", subState: "running", mainPid: 4242, nRestarts: 0 });
        fs.writeFileSync(this.file("journal"), "");
        fs.writeFileSync(this.file("gpus"), "");
        fs.writeFileSync(this.file("apps"), "");
    }

    file(name: string): string {
        return path.join(this.dir, name);
    }

    setUnit(u: UnitStatus): void {
        fs.writeFileSync(this.file("unit"), `ActiveState=${u.activeState}\nSubState=${u.subState}\nMainPID=${u.mainPid}\nNRestarts=${u.nRestarts}\n`);
    }

    appendJournal(lines: string[]): void {
        if (lines.length > 0) fs.appendFileSync(this.file("journal"), lines.map((l) => `${l}\n`).join(""));
    }

    calls(): string[] {
        return fs.existsSync(this.file("calls")) ? fs.readFileSync(this.file("calls"), "utf8").trim().split("\n") : [];
    }

    describe(): string {
        return "fake-box";
    }

    run(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
        this.runs.push(argv);
        return new Promise((resolve, reject) => {
            const child = spawn(argv[0]!, argv.slice(1), {
                env: { ...process.env, ...this.env, FAKE_DIR: this.dir, PATH: `${path.join(this.dir, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}` },
            });
            const out: Buffer[] = [];
            const err: Buffer[] = [];
            child.stdout.on("data", (d: Buffer) => out.push(d));
            child.stderr.on("data", (d: Buffer) => err.push(d));
            child.on("error", reject);
            child.on("close", (code) =>
                resolve({ code: code ?? 255, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }),
            );
            // A command that exits before reading its stdin closes the pipe: EPIPE
            // on our write is the command's business (as over ssh), not an error here.
            child.stdin.on("error", (e: NodeJS.ErrnoException) => {
                if (e.code !== "EPIPE") reject(e);
            });
            child.stdin.end(opts.stdin ?? "");
        });
    }

    destroy(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}
