// The fault matrix's fixture (issue 13, item 7): each fault-matrix file is a
// lab of its own (own loopback addresses, own simulated GPUs) with the stack
// deployed by the real engine, kpro5 topology (pct exec through the Proxmox
// host), so the files run side by side. Each row leaves a working server when
// the previous config worked, and a state that tells the truth: a refresh
// finds nothing the state does not already say, and a change that did not land
// is still pending. A row whose change landed leaves that config serving, and
// the next row starts from it (FaultMatrix.serving): no `up` back in between
// (docs/testing.md "Engine runs"). A refused row's change pending is shown by a
// preview (expectChangePending) or, where the next row declares the same change,
// by that row's `up` diff, which refreshes and diffs as a preview does before
// it changes anything (expectChangeStillPending). docs/testing.md "Fault matrix"
// lists the rows and what each leaves.
import * as assert from "node:assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import { clearFaults, labDown, setFaults } from "../../lab/control";
import type { Faults, LabInfo } from "../../lab/control";
import { labPaths } from "../../lab/lab-info";
import { httpGetJson } from "../../remote/probe";
import { Deployment, EngineResult, expectExit } from "../../lab/deployment";
import { onBox, serviceOutputsInState, startLab, UNIT } from "./lab-box";
import { labStackConfig, StackConfigFile } from "../../lab/stack";

export const API_KEY = "e2e-faults-api-key-0123456789abcdef";
/** The declared config's --mem-fraction-static; each row changes it to a value of its own, which its faults match. */
export const DECLARED = 0.88;
/** The healthy window here: the lab's servers are ready 3 s after their start; a death 3 s after ready falls inside it. */
export const WINDOW_SECONDS = 6;

function fraction(value: number): string[] {
    return ["--mem-fraction-static", String(value)];
}

/** One fault-matrix file's lab and deployment, and what its rows check. */
export class FaultMatrix {
    labDir!: string;
    info!: LabInfo;
    d!: Deployment;
    config!: StackConfigFile;
    /** The --mem-fraction-static serving and declared between rows: DECLARED, then the last row's change that landed. */
    serving = DECLARED;

    service(): StackConfigFile["sglang-serve:service"] {
        return this.config["sglang-serve:service"];
    }

    readiness(): StackConfigFile["sglang-serve:readiness"] {
        return this.config["sglang-serve:readiness"];
    }

    async serverInfo(): Promise<Record<string, unknown>> {
        const r = await httpGetJson(`http://${this.info.container.address}:30000/server_info`, { timeoutMs: 10_000, bearer: API_KEY });
        assert.ok("status" in r && r.status === 200, `server_info: ${JSON.stringify(r).slice(0, 300)}`);
        return r.body as Record<string, unknown>;
    }

    async health(): Promise<number | string> {
        const r = await httpGetJson(`http://${this.info.container.address}:30000/health`, { timeoutMs: 10_000 });
        return "status" in r ? r.status : r.error;
    }

    /** A working server running `value`: unit active and running, the unit file and the live args say it, /health 200. */
    async expectServing(value: number): Promise<void> {
        assert.equal(await onBox(this.labDir, "container", `systemctl show -p ActiveState,SubState --value ${UNIT} | paste -sd/`), "active/running");
        assert.match(await onBox(this.labDir, "container", `cat /etc/systemd/system/${UNIT}`), new RegExp(`--mem-fraction-static ${value}( |$)`, "m"));
        assert.equal((await this.serverInfo()).mem_fraction_static, value);
        assert.equal(await this.health(), 200);
    }

    /** The state says what the box runs: a refresh finds nothing to change. */
    async expectStateTellsTheTruth(): Promise<void> {
        const r = await this.d.run(["refresh", "--preview-only", "--expect-no-changes", "--diff"]);
        const changed = r.stdout.split("\n").filter((l) => /^\s*[~+-] |=>/.test(l));
        assert.equal(r.code, 0, `refresh after the row found what the state does not say:\n${changed.join("\n")}\n${r.output.slice(-1500)}`);
    }

    /** The declared change did not land: the preview still shows it. */
    async expectChangePending(): Promise<void> {
        expectExit(await this.d.preview("--expect-no-changes"), 7, "preview after the row (the change is still pending)");
    }

    /**
     * The change a refused row left is still pending, shown by the next `up`
     * of the same change: with `refresh: always` that up reads the box and
     * diffs it against the program before it changes anything, as a preview
     * does; its diff shows the box still running `from` and `to` declared.
     */
    expectChangeStillPending(nextUp: EngineResult, from: number, to: number): void {
        const line = new RegExp(`~ --mem-fraction-static\\s*: "${String(from).replace(".", "\\.")}" => "${String(to).replace(".", "\\.")}"`);
        assert.match(nextUp.output, line, `the next up's diff does not show the pending change ${from} => ${to}:\n${nextUp.output.slice(-3000)}`);
    }

    /** Declares --mem-fraction-static `value` (and readiness settings) with `faults` set for it, runs `body`, then declares what serves (`serving`) again. */
    async withChange(value: number, faults: Faults, body: () => Promise<void>, readinessOverrides: Record<string, unknown> = {}): Promise<void> {
        const saved = { ...this.readiness() };
        setFaults({ ...faults, whenArgs: faults.whenArgs ?? fraction(value) }, this.labDir);
        try {
            this.service().memFractionStatic = value;
            Object.assign(this.readiness(), readinessOverrides);
            this.d.writeConfig(this.config);
            await body();
        } finally {
            clearFaults(this.labDir);
            this.service().memFractionStatic = this.serving;
            this.config["sglang-serve:readiness"] = saved;
            this.d.writeConfig(this.config);
        }
    }

    /** A row's change landed: `value` serves, and stays declared for the next rows. */
    landed(value: number): void {
        this.serving = value;
    }

    /** The --mem-fraction-static the state's service record holds (`pulumi stack export`). */
    async recordedFlag(flag: string): Promise<string | undefined> {
        const flags = (await serviceOutputsInState(this.d))?.flags as Record<string, string> | undefined;
        return flags?.[flag];
    }
}

export function failedUp(r: EngineResult, what: string): void {
    assert.notEqual(r.code, 0, `${what}: up should fail\n${r.output.slice(-4000)}`);
    assert.equal(r.output.indexOf(API_KEY), -1, "the API key leaked into the up output");
}

/**
 * A describe block of fault-matrix rows on a lab of its own on 127.0.`net`.x:
 * the declared config deployed and serving before the rows, the lab down after.
 */
export function describeFaultRows(title: string, prefix: string, net: number, rows: (m: FaultMatrix) => void): void {
    describe(`the fault matrix on the lab with the real engine (kpro5 topology): ${title}`, function () {
        this.timeout(1_800_000);
        const m = new FaultMatrix();

        before(async () => {
            ({ labDir: m.labDir, info: m.info } = await startLab(prefix, net));
            m.config = labStackConfig(m.info, "pct-exec");
            m.config["sglang-serve:readiness"] = { ...m.config["sglang-serve:readiness"], minHealthySeconds: WINDOW_SECONDS };
            m.d = await Deployment.create("lab", m.config);
            m.d.giveApiKey(API_KEY);
            const up = await m.d.up();
            expectExit(up, 0, "the first up");
            // The window lasts at least WINDOW_SECONDS; a loaded machine's polls may stretch it by a second or two.
            const stayed = /\[readiness\] stayed healthy for (\d+) s after ready/.exec(up.output);
            assert.ok(stayed && Number(stayed[1]) >= WINDOW_SECONDS, `no healthy window of ${WINDOW_SECONDS} s:\n${up.output.slice(-3000)}`);
            await m.expectServing(DECLARED);
        });
        after(async () => {
            m.d?.cleanup();
            if (m.labDir) await labDown(m.labDir);
            delete process.env.SGLANG_LAB_DIR;
        });

        rows(m);
    });
}

/** Logins the host's sshd accepted so far (its log, LogLevel VERBOSE). */
export function acceptedLogins(info: LabInfo): number {
    return (fs.readFileSync(info.host.sshdLog, "utf8").match(/Accepted publickey for root/g) ?? []).length;
}

/**
 * Kills the host's sshd processes serving connections (every descendant of the
 * listener, not the listener): the provider's SSH connection drops in the
 * middle of whatever it runs, as when the network goes away.
 */
export function killSshSessions(labDir: string): number[] {
    const pids = JSON.parse(fs.readFileSync(labPaths(labDir).pids, "utf8")) as { hostSshd?: number };
    assert.ok(pids.hostSshd, "the lab records its host sshd's pid");
    const descendants = (pid: number): number[] => {
        let children: number[];
        try {
            children = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
                .split("\n")
                .map((l) => Number(l.trim()))
                .filter((n) => n > 0);
        } catch {
            children = [];
        }
        return children.flatMap((c) => [c, ...descendants(c)]);
    };
    const victims = descendants(pids.hostSshd);
    for (const pid of victims) {
        try {
            process.kill(pid, "SIGKILL");
        } catch {
            // gone already
        }
    }
    return victims;
}
