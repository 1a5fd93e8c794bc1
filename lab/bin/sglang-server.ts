// The lab's SGLang server behind the launcher boundary: exec'd by
// lab/sglang/sglang_lab_venv.py in the server's own process (same pid, so
// systemd's MainPID stays) with the release's resolved ServerArgs on the fd
// given as the only argument.
import { readHandoff, runSimulator } from "../sglang/simulator";

const [fdArg, labDir] = process.argv.slice(2);
const fd = Number(fdArg);
if (!Number.isInteger(fd) || fd < 0 || !labDir) {
    process.stderr.write("usage: sglang-server.js <fd with the hand-off JSON> <lab dir> (exec'd by sglang_lab_venv.py)\n");
    process.exit(2);
}
// How the lab's stand-ins find their lab (a unit starts the venv's python, not a shim that sets it).
process.env.SGLANG_LAB_DIR = labDir;
runSimulator(readHandoff(fd));
