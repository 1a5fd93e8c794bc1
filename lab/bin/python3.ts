// /opt/sglang/venv/bin/python3 in the lab container: `-m sglang.launch_server`
// runs the SGLang simulator; version probes answer 0.5.11; anything else runs
// the machine's own /usr/bin/python3 (which has no sglang).
import { spawnSync } from "child_process";
import * as fs from "fs";
import { runSimulator } from "../sglang/simulator";

const VERSION = "0.5.11";

function main(argv: string[]): void {
  const self = process.env.SGLANG_LAB_ARGV0 ?? "python3";
  if (argv[0] === "--version" || argv[0] === "-V") {
    process.stdout.write("Python 3.12.3\n");
    return;
  }
  if (argv[0] === "-m" && argv[1] === "sglang.launch_server") return runSimulator("launch_server", argv.slice(2));
  if (argv[0] === "-m" && argv[1] === "sglang.version") {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (argv[0] === "-m" && argv[1] === "pip" && argv[2] === "show" && argv[3] === "sglang") {
    process.stdout.write(`Name: sglang\nVersion: ${VERSION}\nSummary: SGLang is a fast serving framework for large language models and vision language models.\nHome-page: \nAuthor: \nAuthor-email: \nLicense: \nLocation: /opt/sglang/venv/lib/python3.12/site-packages\nRequires: \nRequired-by: \n`);
    return;
  }
  if (argv[0] === "-m" && argv[1]?.startsWith("sglang")) {
    process.stderr.write(`${self}: No module named ${argv[1]}\n`);
    process.exit(1);
  }
  if (argv[0] === "-c" && /\bsglang\b/.test(argv[1] ?? "")) {
    if (/__version__/.test(argv[1]!) && /print/.test(argv[1]!)) {
      process.stdout.write(`${VERSION}\n`);
      return;
    }
    if (/^\s*import sglang\s*$/.test(argv[1]!)) return;
    process.stderr.write(`lab: the python3 stand-in only answers sglang version probes; cannot run: ${argv[1]}\n`);
    process.exit(1);
  }
  const real = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => fs.existsSync(p));
  if (!real) {
    process.stderr.write("lab: no real python3 on this machine\n");
    process.exit(127);
  }
  const r = spawnSync(real, argv, { stdio: "inherit" });
  process.exit(r.status ?? 1);
}

main(process.argv.slice(2));
