// `npm run lab -- up|down|status|exec <host|container> <command...>|stack-config|prepare`
import { labDown, labExec, labListening, labStatus, labUp, readLabInfo, writeLabStackConfig } from "./control";
import { ensureRootfs } from "./rootfs";
import { cacheRoot, releaseCacheRoot } from "../sglang-release/oracle";
import { ensureWheelhouse } from "./sglang/venvs";

const USAGE = "usage: npm run lab -- up [--fresh] | down | status | exec <host|container> <command...> | stack-config | prepare";

function readStdin(): Promise<string> {
    return new Promise((resolve) => {
        let data = "";
        process.stdin.setEncoding("utf8");
        process.stdin.on("data", (d: string) => (data += d));
        process.stdin.on("end", () => resolve(data));
    });
}

async function main(argv: string[]): Promise<number> {
    const [cmd, ...rest] = argv;
    switch (cmd) {
        case "up": {
            const info = await labUp({ fresh: rest.includes("--fresh"), log: (m) => process.stderr.write(`${m}\n`) });
            process.stdout.write(
                `lab up in ${info.labDir}\n` +
                    `  host ${info.host.hostname}: ssh -i ${info.clientKeyPath} -o UserKnownHostsFile=${info.knownHostsFile} -p ${info.host.sshPort} root@${info.host.address}\n` +
                    `  container ${info.vmid} (${info.container.hostname}): root@${info.container.address}:${info.container.sshPort}, or 'pct exec ${info.vmid} -- <cmd>' on the host (LXC, systemd 252 as init)\n` +
                    `  lab.json: ${info.labDir}/lab.json\n`,
            );
            return 0;
        }
        case "down": {
            const r = await labDown();
            process.stdout.write(`lab down (${r.killed} processes stopped)\n`);
            return 0;
        }
        case "status": {
            const s = labStatus();
            if (!s.host || !s.container) {
                process.stdout.write(`lab in ${s.labDir}: never started\n`);
                return 3;
            }
            const l = s.up ? await labListening() : { host: false, container: false };
            process.stdout.write(
                `lab in ${s.labDir}: ${s.up ? "up" : "down"}\n` +
                    `  host      ${s.host.address}:${s.host.port}  namespace=${s.host.namespace} sshd=${s.host.sshd} listening=${l.host}\n` +
                    `  container ${s.container.address}:${s.container.port}  namespace=${s.container.namespace} running=${s.container.running} init=${s.container.init} sshd=${s.container.sshd} listening=${l.container}\n` +
                    `  simulated SGLang servers: ${s.container.simulators.length > 0 ? s.container.simulators.join(", ") : "none"}\n` +
                    `  processes in the lab's cgroup: ${s.processes.length}\n`,
            );
            return s.up ? 0 : 3;
        }
        case "exec": {
            const machine = rest[0];
            if ((machine !== "host" && machine !== "container") || rest.length < 2) {
                process.stderr.write(`${USAGE}\n`);
                return 2;
            }
            const input = process.stdin.isTTY ? "" : await readStdin();
            const r = await labExec(machine, rest.slice(1).join(" "), { input });
            process.stdout.write(r.stdout);
            process.stderr.write(r.stderr);
            return r.code;
        }
        case "stack-config": {
            readLabInfo();
            process.stdout.write(`${writeLabStackConfig()}\n`);
            return 0;
        }
        case "prepare": {
            // The lab's cached parts, made once (scripts/setup.sh) so that labs started side by side find them: the container's rootfs, the wheelhouse.
            const log = (m: string) => process.stderr.write(`${m}\n`);
            ensureRootfs(cacheRoot(), log);
            ensureWheelhouse(releaseCacheRoot(), log);
            return 0;
        }
        default:
            process.stderr.write(`${USAGE}\n`);
            return 2;
    }
}

main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: Error) => {
        process.stderr.write(`${e.message}\n`);
        process.exit(1);
    },
);
