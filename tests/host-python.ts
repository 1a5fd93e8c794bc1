// This machine's python3 for the tests' boxes and tools: resolved once
// (sys.executable), so no version manager's shim runs at every call (pyenv's
// is a tree of about 30 bash processes, about 70 ms of CPU), and laid out as
// a venv without the system site-packages where it stands for a box's python3:
// what a box's own site holds is not this machine's, whose .pth files (a CA
// bundle's certifi) took about 45 ms of CPU at every start.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** The interpreter (absolute) and its major.minor (`3.11`). */
export const [HOST_PYTHON, HOST_PYTHON_VERSION] = execFileSync("python3", ["-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"], {
    encoding: "utf8",
})
    .trim()
    .split("\n") as [string, string];

/**
 * `<dir>/bin/python3` as `python -m venv` lays a venv out (a link to
 * HOST_PYTHON, pyvenv.cfg in `<dir>`): it finds its site-packages from
 * pyvenv.cfg, even isolated (-I), and never the system's. Returns `<dir>/bin`.
 */
export function venvPython(dir: string): string {
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin, { recursive: true });
    fs.symlinkSync(HOST_PYTHON, path.join(bin, "python3"));
    fs.writeFileSync(
        path.join(dir, "pyvenv.cfg"),
        `home = ${path.dirname(HOST_PYTHON)}\ninclude-system-site-packages = false\nversion = ${HOST_PYTHON_VERSION}\n`,
    );
    return bin;
}
