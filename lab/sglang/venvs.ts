// The SGLang venvs of the lab's container, one per release, as a box with
// several venvs has them: each a real `python3 -m venv --without-pip` made by
// the container's own python3 (run in the cached rootfs image, with the lab's
// /opt bound in), whose sglang-lab.pth puts the hardware stubs, the release's
// site dir and the shared deps dir (sglang-release, bound read-only from the
// install.sh cache) on sys.path and boots sglang_lab_venv.py; bin/ gets the
// release's console scripts as pip writes them. See lab/README.md.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { CT_LAB } from "../rootfs";
import { repoDir } from "../lab-info";

/** The field's venv: the release its boxes run (service.sglangVersion in Pulumi.kpro5.yaml), where they have it. */
export const FIELD_VENV = { release: "0.5.11", path: "/opt/sglang/venv" } as const;

/**
 * Release -> venv in the container, one for each of `versions` (the releases
 * of sglang-release/VERSIONS, handed in: the pct stand-in's build compiles
 * this file, and only lab/): the field's at its path, each other beside it as
 * `/opt/sglang/venv-<release>`.
 */
export function sglangVenvs(versions: readonly string[]): Readonly<Record<string, string>> {
    if (!versions.includes(FIELD_VENV.release)) {
        throw new Error(`lab: sglang-release/VERSIONS does not list the field's release ${FIELD_VENV.release} (lab/sglang/venvs.ts FIELD_VENV)`);
    }
    return Object.fromEntries(versions.map((v) => [v, v === FIELD_VENV.release ? FIELD_VENV.path : `/opt/sglang/venv-${v}`]));
}

/** Where the container finds the lab's Python side (read-only): the stubs, oracle.py, sglang_lab_venv.py. */
export const CT_SGLANG_REAL = path.posix.join(CT_LAB.lib, "sglang-real");
/** Where the container finds install.sh's cache (read-only): <version>/site, deps/site. */
export const CT_RELEASES = path.posix.join(CT_LAB.lib, "releases");

/**
 * Where the container's venvs keep the start cache (read-write, shared by every
 * lab of this cache: lab/sglang/sglang_lab_start_cache.py): one record per
 * start key of what the release's config layer handed the simulator.
 */
export const CT_START_CACHE = "/var/cache/sglang-lab/starts";

/** The start cache's folder in install.sh's cache (`releases`), shared by the labs of one cache. */
export function startCacheDir(releases: string): string {
    return path.join(releases, "lab-starts");
}

/** Start records kept (a few KB to some hundred KB each): lab up removes the least recently used beyond this. */
export const START_RECORDS_KEPT = 400;

/** Removes the least recently used start records of `dir` beyond `keep` (a hit renews its record's mtime), and leftover temporary files. */
export function pruneStartCache(dir: string, keep = START_RECORDS_KEPT): void {
    const records = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".json"))
        .flatMap((f) => {
            try {
                return [{ file: path.join(dir, f), used: fs.statSync(path.join(dir, f)).mtimeMs }];
            } catch {
                return [];
            }
        })
        .sort((a, b) => b.used - a.used);
    for (const r of records.slice(keep)) fs.rmSync(r.file, { force: true });
    // A record being written is renamed within a second; one left by a killed start is old.
    for (const f of fs.readdirSync(dir).filter((n) => n.includes(".json.tmp."))) {
        const file = path.join(dir, f);
        try {
            if (Date.now() - fs.statSync(file).mtimeMs > 3_600_000) fs.rmSync(file, { force: true });
        } catch {
            // gone meanwhile
        }
    }
}

/** The boot line of a .pth: the lab's share, and the start cache unless `startCache` is false (SGLANG_LAB_START_CACHE=off at lab up). */
function bootLine(startCache: boolean): string {
    const args = [JSON.stringify(CT_LAB.share), ...(startCache ? [JSON.stringify(CT_START_CACHE)] : [])];
    return `import sglang_lab_venv; sglang_lab_venv.boot(${args.join(", ")})`;
}

/** Whether the lab's starts use the start cache: not when SGLANG_LAB_START_CACHE=off where the lab comes up. */
export function startCacheEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
    return env.SGLANG_LAB_START_CACHE !== "off";
}

/**
 * What the container's venvs run, copied into the lab (not run from the
 * checkout): sglang-release/'s oracle.py and stubs, and the lab's boot
 * (sglang_lab_venv.py, beside this file).
 */
export function copySglangReal(releaseDir: string, dest: string): void {
    fs.rmSync(dest, { recursive: true, force: true });
    fs.mkdirSync(dest, { recursive: true });
    fs.copyFileSync(path.join(releaseDir, "oracle.py"), path.join(dest, "oracle.py"));
    for (const f of ["sglang_lab_venv.py", "sglang_lab_start_cache.py"]) fs.copyFileSync(path.join(repoDir(), "lab", "sglang", f), path.join(dest, f));
    fs.cpSync(path.join(releaseDir, "stubs"), path.join(dest, "stubs"), { recursive: true, filter: (src) => !src.includes("__pycache__") });
}

/**
 * The container python's own site dir for the lab's stubs: a venv the stack
 * stages with `systemSitePackages` (and pip --no-deps) sees torch, CUDA and
 * the kernels here as a box's image would provide them, and the shared
 * config-layer deps; SGLang and its pins come from the wheelhouse. Bound
 * read-only from the lab (Debian bookworm's python3.11: checked at lab up).
 */
export const CT_SYSTEM_SITE = "/usr/local/lib/python3.11/dist-packages";

/** The real wheels the lab's stack stages from (pip --find-links, --no-index): SGLang's and its pins, in install.sh's cache. */
export const CT_WHEELHOUSE = path.posix.join(CT_RELEASES, "wheelhouse");

/**
 * The release the lab's stacks stage with pip (the e2e upgrade and the bench
 * go from the field's to it; the others have ready-made venvs): a choice, not
 * the newest of sglang-release/VERSIONS, so adding a release leaves it be.
 * Its pins come from sglang-release/DEPS (releasePins).
 */
export const LAB_STAGED_RELEASE = "0.5.23";

/** The gateway release the lab's stacks install (smg on PyPI), with its dependencies, from the same wheelhouse. */
export const LAB_GATEWAY_RELEASE = "1.13.0";

/** The system site's .pth: the stubs, the shared deps, the boot (no release site: pip installs the release into the venv). */
export function systemSitePthText(startCache = startCacheEnabled()): string {
    return [`${CT_SGLANG_REAL}/stubs`, `${CT_RELEASES}/deps/site`, CT_SGLANG_REAL, bootLine(startCache), ""].join("\n");
}

/** sglang-release/DEPS's lines for one release: its own pins of what must match it (transformers, tokenizers, ...). */
export function releasePins(version: string): string[] {
    const deps = fs.readFileSync(path.join(repoDir(), "sglang-release", "DEPS"), "utf8");
    return deps
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter(([scope, req]) => scope === version && req !== undefined)
        .map(([, req]) => req!);
}

/**
 * Downloads the staged release's wheel and its pins from PyPI into
 * `<releases>/wheelhouse` once (pip download --no-deps --only-binary): the
 * real wheels the lab's box installs from, without a network in the lab.
 * scripts/setup.sh makes it before the test files' labs start; labs brought
 * up side by side without it each download into a folder of their own, and
 * the first to finish wins: a wheelhouse that holds these requirements is
 * never removed, since a running lab's pip may be reading it.
 */
export function ensureWheelhouse(releases: string, log: (line: string) => void): void {
    const requirements = [`sglang==${LAB_STAGED_RELEASE}`, ...releasePins(LAB_STAGED_RELEASE)];
    // The gateway's venv sees no system site (the lab's stubs are there): smg comes with its own dependencies.
    const gateway = [`smg==${LAB_GATEWAY_RELEASE}`];
    const dir = path.join(releases, "wheelhouse");
    const key = [...requirements, ...gateway].join("\n");
    const complete = () => fs.existsSync(path.join(dir, ".requirements")) && fs.readFileSync(path.join(dir, ".requirements"), "utf8") === key;
    if (complete()) return;
    log(`lab: downloading the wheels the lab's box stages from (${[...requirements, ...gateway].join(" ")})`);
    const tmp = `${dir}.tmp.${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    const python = process.env.SGLANG_SERVE_PYTHON || "python3";
    const download = (args: string[]) => {
        const r = spawnSync(python, ["-m", "pip", "download", "--quiet", "--only-binary=:all:", "--disable-pip-version-check", "--dest", tmp, ...args], {
            encoding: "utf8",
            timeout: 600_000,
        });
        if (r.status !== 0) throw new Error(`lab: pip download ${args.join(" ")} failed (${r.signal ?? `exit ${r.status}`}): ${r.stderr}`);
    };
    try {
        download(["--no-deps", ...requirements]);
        download(gateway);
        fs.writeFileSync(path.join(tmp, ".requirements"), key);
        if (complete()) return;
        try {
            // Another release's wheelhouse (the pins changed) is replaced.
            fs.rmSync(dir, { recursive: true, force: true });
            fs.renameSync(tmp, dir);
        } catch (e) {
            // Another lab's download finished in the meantime (ENOTEMPTY on the rename or the removal): it is kept.
            if (!complete()) throw e;
        }
    } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
}

/** sglang-lab.pth: sys.path entries, then the boot line (site.py runs lines that start with `import`). */
export function pthText(version: string, startCache = startCacheEnabled()): string {
    return [`${CT_SGLANG_REAL}/stubs`, `${CT_RELEASES}/${version}/site`, `${CT_RELEASES}/deps/site`, CT_SGLANG_REAL, bootLine(startCache), ""].join("\n");
}

/** The console scripts of a release's entry_points.txt, as pip (distlib) writes them. */
export function consoleScripts(entryPoints: string, python: string): Record<string, string> {
    const out: Record<string, string> = {};
    let section = "";
    for (const raw of entryPoints.split("\n")) {
        const line = raw.trim();
        const header = /^\[(.+)\]$/.exec(line);
        if (header) section = header[1]!;
        else if (section === "console_scripts" && line.includes("=")) {
            const [name, target] = line.split("=").map((s) => s.trim()) as [string, string];
            const [mod, fn] = target.split(":") as [string, string];
            out[name] =
                `#!${python}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom ${mod} import ${fn.split(".")[0]}\nif __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit(${fn}())\n`;
        }
    }
    return out;
}

function distInfo(site: string, version: string): string {
    const d = path.join(site, `sglang-${version}.dist-info`);
    if (!fs.existsSync(d)) throw new Error(`lab: SGLang ${version} is not installed in ${site} (sglang-release/install.sh)`);
    return d;
}

/**
 * `python3 -m venv` with the container's python3, chrooted into its image in a
 * mount namespace of its own. Tried twice when a signal kills it: fresh-clone
 * runs saw it SIGKILLed, with no output, twice in about twenty full runs, and
 * the killer was not found (no timeout of ours sends SIGKILL here).
 */
function makeVenv(optDir: string, rootfsImage: string, venv: string, dir: string): void {
    for (let attempt = 1; ; attempt++) {
        fs.rmSync(dir, { recursive: true, force: true });
        fs.mkdirSync(dir, { recursive: true });
        const r = spawnSync(
            "unshare",
            [
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                'mount --bind "$1" "$2/opt" && exec chroot "$2" /usr/bin/python3 -B -m venv --without-pip "$3"',
                "sh",
                optDir,
                rootfsImage,
                venv,
            ],
            // Well under a second alone; minutes when ten test files bring up their labs at once on two cores.
            { encoding: "utf8", timeout: 240_000 },
        );
        if (r.status === 0) return;
        if (r.signal && !r.error && attempt === 1) continue;
        throw new Error(
            `lab: python3 -m venv ${venv} in the container's image failed (${r.signal ? `killed by ${r.signal}${r.error ? `: ${r.error.message}` : ""}` : `exit ${r.status}`}): ${r.stderr}`,
        );
    }
}

/**
 * Makes the venvs of `versions` (sglangVenvs) under `optDir` (the lab
 * directory the container has at /opt): the venv itself once, with the
 * container's python3 (chroot into the rootfs image, in a mount namespace of
 * its own); the .pth and the console scripts every time (cheap, and they
 * follow the checkout).
 */
export function ensureVenvs(optDir: string, rootfsImage: string, releases: string, versions: readonly string[]): void {
    for (const [version, venv] of Object.entries(sglangVenvs(versions))) {
        const site = path.join(releases, version, "site");
        const info = distInfo(site, version);
        const dir = path.join(optDir, path.posix.relative("/opt", venv));
        if (!fs.existsSync(path.join(dir, "pyvenv.cfg"))) {
            makeVenv(optDir, rootfsImage, venv, dir);
        }
        const lib = path.join(dir, "lib");
        const py = fs.readdirSync(lib).find((d) => /^python3\.\d+$/.test(d));
        if (!py) throw new Error(`lab: ${venv} has no lib/python3.N`);
        fs.writeFileSync(path.join(lib, py, "site-packages", "sglang-lab.pth"), pthText(version));
        const scripts = consoleScripts(fs.readFileSync(path.join(info, "entry_points.txt"), "utf8"), `${venv}/bin/python3`);
        for (const [name, text] of Object.entries(scripts)) fs.writeFileSync(path.join(dir, "bin", name), text, { mode: 0o755 });
    }
}
