// The lab container's init: a service manager (lab/systemd/manager.ts)
// listening for systemctl on /run/systemd/lab/manager.sock. Started by
// `lab up` / `pct start` inside the container's namespaces; at start it
// starts the enabled units (like boot), on SIGTERM it stops them.
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { currentLab } from "../lab-info";
import { JournalWriter } from "../systemd/journal";
import { Manager } from "../systemd/manager";
import { MANAGER_SOCKET, Reply, Request } from "../systemd/protocol";
import { runSystemctl } from "../systemd/systemctl-cli";

async function main(): Promise<void> {
  const info = currentLab();
  const journalDir = info.journalDir.inContainer;
  const hostname = os.hostname();
  const journal = new JournalWriter(journalDir, randomBytes(16).toString("hex"), hostname);
  const manager = new Manager({
    unitDir: "/etc/systemd/system",
    journal,
    journalDir,
    hostname,
    managerEnv: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8" },
  });
  fs.mkdirSync(path.dirname(MANAGER_SOCKET), { recursive: true });
  fs.rmSync(MANAGER_SOCKET, { force: true });
  const server = net.createServer((sock) => {
    let buf = "";
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      let req: Request;
      try {
        req = JSON.parse(buf.slice(0, nl)) as Request;
      } catch {
        sock.end(JSON.stringify({ code: 1, stdout: "", stderr: "Failed to parse request\n" }) + "\n");
        return;
      }
      runSystemctl(manager, req.argv)
        .then((r: Reply) => sock.end(JSON.stringify(r) + "\n"))
        .catch((e: Error) => sock.end(JSON.stringify({ code: 1, stdout: "", stderr: `lab systemd: ${e.message}\n` }) + "\n"));
    });
    sock.on("error", () => undefined);
  });
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    server.close();
    await manager.shutdown(15_000);
    fs.rmSync(MANAGER_SOCKET, { force: true });
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown());
  process.on("SIGINT", () => void shutdown());
  process.on("SIGHUP", () => undefined);
  await new Promise<void>((resolve) => server.listen(MANAGER_SOCKET, resolve));
  await manager.boot();
}

main().catch((e: Error) => {
  process.stderr.write(`lab systemd: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
