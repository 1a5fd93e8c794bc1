// systemctl stand-in: forwards argv to the container's supervisor and prints its answer.
import * as net from "net";
import { MANAGER_SOCKET, Reply } from "../systemd/protocol";

function main(argv: string[]): void {
  const sock = net.connect(MANAGER_SOCKET);
  let buf = "";
  sock.setEncoding("utf8");
  sock.on("connect", () => sock.write(JSON.stringify({ argv }) + "\n"));
  sock.on("data", (d: string) => (buf += d));
  sock.on("error", () => {
    process.stderr.write("System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n");
    process.exit(1);
  });
  sock.on("end", () => {
    let r: Reply;
    try {
      r = JSON.parse(buf) as Reply;
    } catch {
      process.stderr.write("Failed to connect to bus: Connection reset by peer\n");
      process.exit(1);
    }
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    process.exitCode = r.code;
  });
}

main(process.argv.slice(2));
