/**
 * `npm run provider-host`: the warm provider hosts of this user
 * (providers/host/main.ts), which keep the dynamic providers' modules loaded
 * and their SSH connections open between engine runs.
 *
 *   npm run provider-host               status of every host
 *   npm run provider-host -- stop       stop this project's host (e.g. to drop its SSH connections now)
 *   npm run provider-host -- stop --all stop every host
 *
 * Hosts also stop by themselves after SGLANG_SERVE_PROVIDER_HOST_IDLE_SECONDS
 * (default 600) with no engine run, and when their project or build is gone.
 */
import * as path from "path";
import { hostRuntimeDir, hostStatuses, stopHosts } from "../providers/host/control";

async function main(): Promise<number> {
    const [command = "status", ...rest] = process.argv.slice(2);
    const project = path.resolve(process.env.SGLANG_SERVE_PROJECT_DIR ?? path.join(__dirname, ".."));
    if (command === "status") {
        const hosts = await hostStatuses();
        if (hosts.length === 0) console.log(`no provider host running (${hostRuntimeDir()})`);
        for (const h of hosts) {
            const ssh = Object.entries(h.ssh)
                .map(([host, s]) => `${host}: ${s.connectionsOpened} connection(s), ${s.commandsRun} command(s)`)
                .join("; ");
            console.log(
                `pid ${h.pid}  ${h.root}  build ${h.buildId.slice(0, 12)}  since ${h.startedAt}  ` +
                    `${h.engineConnections} engine run(s) connected  stops after ${h.idleStopSeconds} s idle` +
                    (ssh ? `\n    ssh ${ssh}` : ""),
            );
        }
        return 0;
    }
    if (command === "stop") {
        const all = rest.includes("--all");
        const n = await stopHosts(all ? {} : { root: project });
        console.log(`stopped ${n} provider host(s)${all ? "" : ` serving ${project}`}`);
        return 0;
    }
    console.error(`unknown command ${JSON.stringify(command)}: use status, stop or stop --all`);
    return 2;
}

main().then(
    (code) => (process.exitCode = code),
    (e) => {
        console.error((e as Error).message);
        process.exitCode = 1;
    },
);
