// systemctl <-> supervisor: one JSON request line, one JSON reply line, over a
// unix socket in the container's /run.
export const MANAGER_SOCKET = "/run/systemd/lab/manager.sock";

export interface Request {
  argv: string[];
}

export interface Reply {
  code: number;
  stdout: string;
  stderr: string;
}
