/**
 * `npm run lab`: the whole flow on this machine. Brings the lab up if needed,
 * writes the `lab` stack's config (kpro5's server settings pointed at the
 * lab), runs `pulumi up --stack lab` with the real engine and the lab's API
 * key (generated once, 0600, given as a deploy job gives it:
 * SGLANG_SERVE_API_KEY) on the checkout's own backend and passphrase
 * (lab/stack.ts labRunEnvironment), and ends with the OpenAI endpoint and a
 * sample curl.
 *
 *   npm run lab                 up (the main command)
 *   npm run lab -- <subcommand> the lab itself: up | down | status | exec <host|container> <command...>
 */
import { spawnSync } from "child_process";
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { labListening, labUp, readLabInfo, writeLabStackConfig } from "../lab/control";
import { labRunEnvironment } from "../lab/stack";

const repo = path.resolve(__dirname, "..");
const pulumiSh = path.join(repo, "scripts", "pulumi.sh");
/** The lab server's API key (generated once, 0600): the deploy run's SGLANG_SERVE_API_KEY. */
const apiKeyFile = path.join(repo, ".pulumi-state", "lab-api-key");

function labApiKey(): string {
    if (!fs.existsSync(apiKeyFile)) {
        fs.mkdirSync(path.dirname(apiKeyFile), { recursive: true });
        fs.writeFileSync(apiKeyFile, `${randomBytes(24).toString("hex")}\n`, { mode: 0o600 });
    }
    return fs.readFileSync(apiKeyFile, "utf8").trim();
}

function pulumi(args: string[], opts: { capture?: boolean; input?: string } = {}) {
    const r = spawnSync(pulumiSh, args, {
        cwd: repo,
        env: labRunEnvironment(process.env, labApiKey()),
        stdio: [opts.input === undefined ? "inherit" : "pipe", opts.capture ? "pipe" : "inherit", "inherit"],
        input: opts.input,
        encoding: "utf8",
    });
    return { code: r.status ?? 1, stdout: r.stdout ?? "" };
}

async function main(): Promise<number> {
    const listening = await labListening().catch(() => ({ host: false, container: false }));
    if (!listening.host || !listening.container) {
        console.log("lab: starting the simulated Proxmox host and container 129 on loopback ...");
        await labUp();
    }
    const info = readLabInfo();
    writeLabStackConfig();

    console.log(`lab: pulumi up --stack lab (host ${info.host.address}, container ${info.container.address} through pct exec)`);
    const up = pulumi(["up", "--yes", "--skip-preview", "--stack", "lab"]);
    if (up.code !== 0) return up.code;

    const outputs = JSON.parse(pulumi(["stack", "output", "--json", "--stack", "lab"], { capture: true }).stdout) as {
        openaiBaseUrl: string;
        servedModelName: string;
    };
    console.log(`
The server is ready.
  OpenAI endpoint: ${outputs.openaiBaseUrl}
  model:           ${outputs.servedModelName}
  API key:         cat .pulumi-state/lab-api-key

  curl -s ${outputs.openaiBaseUrl}/chat/completions \\
    -H "Authorization: Bearer $(cat .pulumi-state/lab-api-key)" \\
    -H 'Content-Type: application/json' \\
    -d '{"model": "${outputs.servedModelName}", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 32}'
`);
    return 0;
}

if (process.argv.length > 2) {
    // A lab subcommand: hand over to the lab's own CLI.
    const r = spawnSync(process.execPath, ["--require", path.join(repo, "ts-hook.cjs"), path.join(repo, "lab", "cli.ts"), ...process.argv.slice(2)], {
        stdio: "inherit",
    });
    process.exit(r.status ?? 1);
} else {
    main().then(
        (code) => process.exit(code),
        (e: Error) => {
            console.error(`lab: ${e.message}`);
            process.exit(1);
        },
    );
}
