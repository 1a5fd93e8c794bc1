/**
 * The venvs the stack owns on the box, one per SGLang release (service.venv):
 * where a release's venv is, how the rollout stages a missing one with pip
 * while the running server serves (STAGE_SCRIPT), how it checks what pip
 * installed with the release's own parser before anything stops
 * (RELEASE_PARSER_SCRIPT), and which old venvs go after a successful rollout
 * (PRUNE_SCRIPT). Pure: the commands are run by remote/venv-staging.ts.
 */
import type { ServiceConfig, VenvConfig } from "../config/schema";
import { ENVIRONMENT_DIRECTORY, UNIT_DIRECTORY } from "../unit/unit-paths";

/** Written into a venv when its install and checks passed: `{release, stagedBy}`. Only such venvs are ever removed. */
export const STAGED_MARKER = ".sglang-serve-venv";
/** Present while a venv is being staged; a venv that still has it was interrupted, and the next rollout stages it again. */
export const STAGING_MARKER = ".sglang-serve-staging";

/** A venv's interpreter, as the unit runs it. */
export function venvPython(dir: string): string {
    return `${dir}/bin/python3`;
}

/** The declared release's venv: adopted as it is, else `<root>/venv-<version>`. */
export function releaseVenvDir(venv: Pick<VenvConfig, "root" | "adopt">, version: string): string {
    return venv.adopt[version] ?? `${venv.root.replace(/\/+$/, "")}/venv-${version}`;
}

/** The python the unit runs: service.python, or the declared release's venv's. */
export function servicePython(service: { python?: string; venv?: Pick<VenvConfig, "root" | "adopt">; sglangVersion: string }): string {
    if (service.python !== undefined) return service.python;
    if (service.venv === undefined) throw new Error("service.python or service.venv must be set (the config rules say so)");
    return venvPython(releaseVenvDir(service.venv, service.sglangVersion));
}

/** What the rollout needs to stage and prune the declared release's venv (a prop of the SglangService, and of the gateway for smg). */
export interface VenvPlan {
    /** What is installed, as the messages name it; absent: SGLang (states written before the gateway). huggingface-hub: the weights' downloader (core/weights/hub-venv.ts). */
    product?: "smg" | "huggingface-hub";
    release: string;
    dir: string;
    python: string;
    root: string;
    basePython: string;
    systemSitePackages: boolean;
    /** pip's options (sources, then pipArgs). */
    pipOptions: string[];
    /** `sglang==<release>` and the pins. */
    requirements: string[];
    keepPrevious: number;
    installTimeoutSeconds: number;
    /** The server's flags as the unit passes them, without `--config` (its file may not exist yet): what the release's parser is given. SGLang only. */
    parserArgv: string[];
}

/** The distribution a plan installs (its package metadata names the release) and how the messages name it. */
export function productOf(plan: Pick<VenvPlan, "product">): { distribution: string; name: string } {
    switch (plan.product) {
        case "smg":
            return { distribution: "smg", name: "smg" };
        case "huggingface-hub":
            return { distribution: "huggingface-hub", name: "huggingface_hub" };
        case undefined:
            return { distribution: "sglang", name: "SGLang" };
        default: {
            const never: never = plan.product;
            throw new Error(`unknown product ${String(never)}`);
        }
    }
}

/** The flags of a rendered server command line (after `sglang serve` or `-m sglang.launch_server`), `--config <file>` left out. */
export function parserArgvOf(argv: readonly string[]): string[] {
    const start = argv[1] === "serve" ? 2 : argv[1] === "-m" ? 3 : 1;
    const flags = argv.slice(start);
    const out: string[] = [];
    for (let i = 0; i < flags.length; i++) {
        if (flags[i] === "--config") i++;
        else if (!flags[i]!.startsWith("--config=")) out.push(flags[i]!);
    }
    return out;
}

export function venvPlanOf(service: ServiceConfig, argv: readonly string[]): VenvPlan | undefined {
    return service.venv ? releasePlan(service.venv, service.sglangVersion, "sglang", parserArgvOf(argv)) : undefined;
}

/** The gateway's venv: smg's release, checked by its package metadata alone. */
export function gatewayVenvPlan(gateway: { venv: VenvConfig; smgVersion: string }): VenvPlan {
    return { product: "smg", ...releasePlan(gateway.venv, gateway.smgVersion, "smg", []) };
}

/** A venv of `distribution==release` at `<root>/venv-<release>` (or adopted), with venv's sources; the parser's flags for SGLang only. */
export function releasePlan(venv: VenvConfig, release: string, distribution: string, parserArgv: string[]): VenvPlan {
    const dir = releaseVenvDir(venv, release);
    return {
        release,
        dir,
        python: venvPython(dir),
        root: venv.root.replace(/\/+$/, ""),
        basePython: venv.basePython,
        systemSitePackages: venv.systemSitePackages,
        pipOptions: [
            ...(venv.indexUrl ? [`--index-url=${venv.indexUrl}`] : []),
            ...venv.extraIndexUrls.map((u) => `--extra-index-url=${u}`),
            ...venv.findLinks.map((l) => `--find-links=${l}`),
            ...venv.pipArgs,
        ],
        requirements: [`${distribution}==${release}`, ...venv.pins],
        keepPrevious: venv.keepPrevious,
        installTimeoutSeconds: venv.installTimeoutSeconds,
        parserArgv,
    };
}

/** Where pip's packages come from, as the preview and the progress lines say it. */
export function describeSource(plan: VenvPlan): string {
    const from = plan.pipOptions.length ? plan.pipOptions.join(" ") : "the box's pip configuration";
    return `pip install ${plan.requirements.join(" ")} (${from})`;
}

/**
 * Run as a transient systemd unit (systemd-run), so it outlives the SSH
 * session: `sh -c STAGE_SCRIPT sh <venv> <basePython> <0|1 system site> <log>
 * <pip argument>...`. Its output goes to <log>, its exit status to <log>.exit.
 * A directory at <venv> that the stack did not begin staging is never
 * touched (exit 65); one it began (STAGING_MARKER) is removed and made again.
 */
export const STAGE_SCRIPT = `venv=$1 base=$2 ssp=$3 log=$4
shift 4
mkdir -p "$(dirname "$log")"
rm -f "$log.exit"
exec >"$log" 2>&1
trap 'echo $? >"$log.exit"' EXIT
set -eu
if [ -e "$venv" ] && [ ! -e "$venv/${STAGING_MARKER}" ]; then
  echo "sglang-serve: $venv exists and was not staged by sglang-serve: remove it, or adopt it (service.venv.adopt)"
  exit 65
fi
rm -rf "$venv"
mkdir -p "$venv"
: >"$venv/${STAGING_MARKER}"
echo "sglang-serve: creating the venv with $base"
if [ "$ssp" = 1 ]; then "$base" -m venv --system-site-packages "$venv"; else "$base" -m venv "$venv"; fi
echo "sglang-serve: pip install $*"
"$venv/bin/python3" -m pip install --no-input --disable-pip-version-check --progress-bar off "$@"
echo "sglang-serve: pip finished"
`;

/** Exit status of STAGE_SCRIPT when the venv's directory is someone else's. */
export const STAGE_NOT_OURS_EXIT = 65;

/** The transient unit that stages a service's venv. */
export function stageUnitName(unitName: string): string {
    return `${unitName.replace(/\.service$/, "")}-stage.service`;
}

/** Where the staging's output goes on the box. */
export function stageLogPath(unitName: string): string {
    return `/run/sglang-serve/${unitName.replace(/\.service$/, "")}-stage.log`;
}

export function stageArgv(plan: VenvPlan, unitName: string): string[] {
    return [
        "systemd-run",
        `--unit=${stageUnitName(unitName)}`,
        "--collect",
        "--quiet",
        `--property=RuntimeMaxSec=${plan.installTimeoutSeconds}`,
        // As a variable, not --root-user-action (pip 22.1+): an older pip from the box's ensurepip ignores it.
        "--setenv=PIP_ROOT_USER_ACTION=ignore",
        "sh",
        "-c",
        STAGE_SCRIPT,
        "sh",
        plan.dir,
        plan.basePython,
        plan.systemSitePackages ? "1" : "0",
        stageLogPath(unitName),
        ...plan.pipOptions,
        ...plan.requirements,
    ];
}

/**
 * One poll of the staging: its log, a separator, the exit status (empty while
 * it runs), the unit's state. The state is read first: the script writes its
 * exit status before its unit ends, so a unit seen ended has its status
 * written by the time the file is read. Read the other way round, a script
 * ending between the two reads looked like a unit killed without a status.
 */
export const STAGE_POLL_SCRIPT = `state=$(systemctl is-active "$2" 2>/dev/null || true); cat "$1" 2>/dev/null; echo; echo "${"---"}sglang-serve-stage---"; cat "$1.exit" 2>/dev/null || echo; echo "$state"`;

export interface StagePoll {
    lines: string[];
    /** Set once the script has ended. */
    exitStatus?: number;
    /** The transient unit's ActiveState (`active` while pip runs). */
    unitState: string;
}

export function parseStagePoll(stdout: string): StagePoll {
    const at = stdout.lastIndexOf("---sglang-serve-stage---");
    const log = at < 0 ? stdout : stdout.slice(0, at);
    const tail = at < 0 ? [] : stdout.slice(at).split("\n").slice(1);
    const exit = (tail[0] ?? "").trim();
    return {
        lines: log
            .replace(/\n+$/, "")
            .split("\n")
            .filter((l) => l.length > 0),
        ...(/^\d+$/.test(exit) ? { exitStatus: Number(exit) } : {}),
        unitState: (tail[1] ?? "").trim(),
    };
}

/**
 * `env CUDA_VISIBLE_DEVICES= <python> -I -c RELEASE_PARSER_SCRIPT <flag>...`:
 * the installed release's own parser (the argparse its `prepare_server_args`
 * builds: `ServerArgs.add_cli_args`) takes the rendered flags, or exits 2
 * with argparse's message. No GPU is visible to it, and no ServerArgs is
 * built (its checks look at the GPUs; the preview ran them already with the
 * same release's code). Prints the installed version on success.
 */
export const RELEASE_PARSER_SCRIPT = `import argparse, sys
import importlib.metadata as md
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
parser.parse_args(sys.argv[1:])
print(md.version("sglang"))
`;

export function releaseParserArgv(plan: VenvPlan): string[] {
    return ["env", "CUDA_VISIBLE_DEVICES=", plan.python, "-I", "-c", RELEASE_PARSER_SCRIPT, ...plan.parserArgv];
}

/** What checks an installed venv: SGLang's own parser with the flags (printing the version), or for the others their package metadata's version. */
export function installCheckArgv(plan: VenvPlan): string[] {
    if (plan.product !== undefined) return [plan.python, "-I", "-c", `import importlib.metadata as md; print(md.version("${productOf(plan).distribution}"))`];
    return releaseParserArgv(plan);
}

/** Marks a checked venv as staged by `owner` (`sh -c MARK_STAGED_SCRIPT sh <venv> <marker json>`). */
export const MARK_STAGED_SCRIPT = `printf '%s\\n' "$2" >"$1/${STAGED_MARKER}.tmp" && mv "$1/${STAGED_MARKER}.tmp" "$1/${STAGED_MARKER}" && rm -f "$1/${STAGING_MARKER}"`;

export function markStagedArgv(plan: VenvPlan, owner: string): string[] {
    return ["sh", "-c", MARK_STAGED_SCRIPT, "sh", plan.dir, JSON.stringify({ release: plan.release, stagedBy: owner })];
}

/** Removes a venv whose staging or check failed (only while it still has STAGING_MARKER: nothing ever served from it). */
export const DISCARD_STAGING_SCRIPT = `[ -e "$1/${STAGING_MARKER}" ] && rm -rf "$1"; true`;

/**
 * After a successful rollout: `sh -c PRUNE_SCRIPT sh <root> <serving venv>
 * <keep> <owner> <unit directory>...`. Among `<root>/venv-*` with
 * STAGED_MARKER naming this owner, leaves the serving one, every one a file in
 * the unit directories names (units, the rollback's `.previous` copies, other
 * servers), and the `<keep>` most recently staged of the rest; removes the
 * others, printing each.
 */
export const PRUNE_SCRIPT = `root=$1 serving=$2 keep=$3 owner=$4
shift 4
set -eu
ours() { grep -qF "\\"stagedBy\\":\\"$owner\\"" "$1/${STAGED_MARKER}" 2>/dev/null; }
named() { d=$1; shift; grep -rqsF -- "$d/bin/" "$@"; }
kept=0
for marker in $(ls -1t "$root"/venv-*/${STAGED_MARKER} 2>/dev/null); do
  dir=\${marker%/${STAGED_MARKER}}
  [ "$dir" = "$serving" ] && continue
  ours "$dir" || continue
  named "$dir" "$@" && continue
  if [ "$kept" -lt "$keep" ]; then kept=$((kept + 1)); continue; fi
  rm -rf "$dir"
  echo "$dir"
done
`;

export function pruneArgv(plan: VenvPlan, owner: string): string[] {
    return ["sh", "-c", PRUNE_SCRIPT, "sh", plan.root, plan.dir, String(plan.keepPrevious), owner, UNIT_DIRECTORY, ENVIRONMENT_DIRECTORY];
}
