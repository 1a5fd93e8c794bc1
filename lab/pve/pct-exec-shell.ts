// `pct exec <vmid> -- <command...>` and `pct status <vmid>` in sh, as the
// first lines of the lab's pct shim. The stack runs every command in the
// container this way (the kpro5 topology), thousands of times in a test run,
// and reads the container's status on every refresh; starting node for pct.js
// (about 0.1 CPU-s) was most of each call's cost. The steps are pct.js's and
// pve-container's (src/PVE/CLI/pct.pm: load_config, check_running, then for
// exec `exec lxc-attach`, so lxc-attach is the process the caller waits on, as
// Perl's exec makes it; for status, `status: running|stopped`). Every other
// shape (options, another vmid, a missing config, a stopped container's exec,
// no command) falls through to pct.js, which prints PVE's errors.
import { LabInfo, LAB_ENV } from "../lab-info";
import { shellQuote } from "../lab-build";
import { commandSocket, confFile } from "./ct-runtime";

/** Shell lines that exec lxc-attach for the plain exec shape, print the plain status shape, and otherwise do nothing. */
export function pctExecShell(info: LabInfo): string {
    const vmid = info.vmid;
    // check_running: the container's command socket is listed in /proc/net/unix (ct-runtime.ts isRunning).
    const running = `awk -v s=${shellQuote(commandSocket(info, vmid))} '$NF == s { found = 1 } END { exit !found }' /proc/net/unix`;
    return [
        `if [ "$2" = ${vmid} ] && [ -f ${shellQuote(confFile(info, vmid))} ]; then`,
        `  if [ "$1" = exec ] && [ "$3" = -- ] && [ $# -gt 3 ] && ${running}; then`,
        "    shift 3",
        // --keep-env is PVE 8's default; the shim's own variables are not the caller's environment.
        `    unset ${LAB_ENV} SGLANG_LAB_ARGV0`,
        `    exec lxc-attach -n ${vmid} --keep-env -- "$@"`,
        "  fi",
        `  if [ "$1" = status ] && [ $# -eq 2 ]; then`,
        `    if ${running}; then echo 'status: running'; else echo 'status: stopped'; fi`,
        "    exit 0",
        "  fi",
        "fi",
    ].join("\n");
}
