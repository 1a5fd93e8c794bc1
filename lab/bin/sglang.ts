// /opt/sglang/venv/bin/sglang in the lab container: `sglang serve [model]
// flags...` runs the SGLang simulator (same flags as launch_server).
import { runSimulator } from "../sglang/simulator";

const COMMANDS = ["serve", "generate", "version"];

function main(argv: string[]): void {
  const cmd = argv[0];
  if (cmd === "serve") return runSimulator("serve", argv.slice(1));
  if (cmd === "version" || cmd === "--version") {
    process.stdout.write("sglang 0.5.11\n");
    return;
  }
  const usage = "usage: sglang [-h] {serve,generate,version} ...\n";
  if (cmd === "-h" || cmd === "--help") {
    process.stdout.write(`${usage}\npositional arguments:\n  {serve,generate,version}\n\noptions:\n  -h, --help            show this help message and exit\n`);
    return;
  }
  process.stderr.write(
    cmd === undefined
      ? `${usage}sglang: error: the following arguments are required: command\n`
      : `${usage}sglang: error: argument command: invalid choice: '${cmd}' (choose from ${COMMANDS.map((c) => `'${c}'`).join(", ")})\n`,
  );
  process.exit(2);
}

main(process.argv.slice(2));
