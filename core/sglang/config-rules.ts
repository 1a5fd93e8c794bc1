/**
 * The config rules SGLang's own code stands behind: the python and release,
 * the ServerArgs rules that crashed the server in the field (caught at
 * preview), extraArgs through the declared release's argparse, and
 * SGLANG_ENABLE_SPEC_V2 per release.
 */
import { pulumiKey } from "../config/namespace";
import type { ServiceConfig } from "../config/schema";
import { ExtraFlag, extraFlagInteger, extraFlags, repeatedExtraFlags, shownExtraFlag } from "./extra-args";
import { SGLANG_RELEASES, sglangRelease } from "./releases";
import { OWNED_FLAGS } from "./settings";
import { argparseOption, argparseTable, argparseVersions, judgeExtraArgs } from "./argparse";
import { parseSglangBool, readsSpecV2Env, SPEC_V2_ENV, SPEC_V2_ENV_REMOVED_IN } from "./rules";
import { judgeServerArgs, ServerArgsKey, specV2On } from "./server-args";
import { Findings } from "../config/findings";

/** The unit's python comes from exactly one place: service.python, or the venvs the stack stages (service.venv). */
export function pythonRule(service: ServiceConfig, f: Findings): void {
    if (service.python !== undefined && service.venv !== undefined) {
        f.issue(
            "service.python",
            service.python,
            `${pulumiKey("service.python")} and ${pulumiKey("service.venv")} are both set: keep one. With service.venv the stack installs each release into ${service.venv.root}/venv-<version>; ` +
                `to keep the venv you have, remove service.python and adopt it (service.venv.adopt: {"${service.sglangVersion}": ${service.python.replace(/\/bin\/[^/]+$/, "")}}).`,
        );
    } else if (service.python === undefined && service.venv === undefined) {
        f.issue(
            "service.python",
            undefined,
            `${pulumiKey("service.python")} is not set: set it to the python of the venv that has SGLang ${service.sglangVersion} (e.g. /opt/sglang/venv/bin/python3), or set service.venv (root: /opt/sglang) to let the stack install each release.`,
        );
    }
    const adopted = service.venv?.adopt[service.sglangVersion];
    if (service.venv && adopted === undefined && service.venv.root.replace(/\/+$/, "") === "") {
        f.issue("service.venv.root", service.venv.root, `${pulumiKey("service.venv.root")} must be a directory other than /: e.g. /opt/sglang.`);
    }
}

/**
 * A release whose ServerArgs rules the stack has not transcribed (not in
 * core/sglang/releases.ts) is judged by its own code alone: the rules of
 * another release could contradict it (0.5.23 resolves auto to an extra
 * buffer where 0.5.11 refuses). Said as a notice.
 */
export function versionRule(service: ServiceConfig, f: Findings): void {
    if (!sglangRelease(service.sglangVersion).verified) {
        f.note(
            `${pulumiKey("service.sglangVersion")} is ${service.sglangVersion}: its ServerArgs rules are SGLang's own code, run at the preview once a refresh has read the box's config.json (else by the rollout, before anything stops); ` +
                `the stack's transcribed rules cover ${SGLANG_RELEASES.map((r) => r.version).join(", ")} (core/sglang/releases.ts).`,
        );
    }
}

/** `--mamba-track-interval N` (or `=N`) in extraArgs: its value, the index of its flag, and how it was written. */
export function mambaTrackInterval(service: ServiceConfig): { value: number; index: number; shown: string } | undefined {
    const interval = extraFlagInteger(service.extraArgs, "--mamba-track-interval");
    return interval && { value: interval.value, index: interval.given.index, shown: shownExtraFlag(interval.given) };
}

const SERVER_ARGS_INPUTS = [
    "service.speculative",
    "service.disableRadixCache",
    "service.model.architecture",
    "service.sglangVersion",
    "service.mambaSchedulerStrategy",
];

/**
 * The transcribed ServerArgs rules of a verified release (core/sglang/server-args.ts,
 * read from its source): the exception it would raise at startup fails the
 * preview under the key it is about, with SGLang's text and the fix; what it
 * would change silently is a warning naming the value it will run. False
 * when they refuse. (The release's own code judges too, once the box's
 * config.json is known: providers/sglang-server/verdict.ts.)
 */
function transcribedServerArgsRule(service: ServiceConfig, f: Findings): boolean {
    const release = sglangRelease(service.sglangVersion);
    const spec = service.speculative;
    const interval = mambaTrackInterval(service);
    // Without a declared architecture the hybrid-model rules wait for the box's config.json (core/box/box-facts.ts).
    const verdict = judgeServerArgs(release, {
        architecture: service.model.architecture ?? "(from the box)",
        speculative: spec,
        mambaSchedulerStrategy: service.mambaSchedulerStrategy,
        disableRadixCache: service.disableRadixCache,
        maxRunningRequests: service.maxRunningRequests,
        mambaTrackInterval: interval?.value,
        environment: service.environment,
        servedModelName: service.model.servedName,
    });
    for (const refusal of verdict.refusals) {
        const key = refusal.key === "service.mambaTrackInterval" ? `service.extraArgs[${interval!.index}]` : refusal.key;
        const value = valueOfKey(service, refusal.key, interval);
        let message = `${key} is ${shownValue(value)}: SGLang ${service.sglangVersion} refuses it at startup with\n       ${refusal.error}\n       Fix: ${refusal.fix}.`;
        if (refusal.key === "service.speculative.algorithm" && spec) message += algorithmHint(spec.algorithm, release.speculativeAlgorithms);
        f.issue(key, value, message, SERVER_ARGS_INPUTS);
    }
    if (verdict.refusals.length > 0) return false;
    if (spec) {
        const runs = verdict.runs;
        const changed = (name: "numSteps" | "eagleTopk" | "numDraftTokens") =>
            spec[name] !== undefined && runs[name] !== undefined && runs[name] !== spec[name];
        for (const name of ["numSteps", "eagleTopk", "numDraftTokens"] as const) {
            if (!changed(name)) continue;
            f.warn(
                `${pulumiKey(`service.speculative.${name}`)} is ${spec[name]}, but SGLang ${service.sglangVersion} runs ${runs[name]} ` +
                    `(${spec.algorithm === "DFLASH" ? "DFLASH runs one step with topk 1" : "with eagleTopk 1 it runs numSteps + 1 draft tokens"}): declare ${runs[name]}.`,
            );
        }
        if ((spec.algorithm === "NEXTN" || spec.algorithm === "EAGLE") && spec.draftModelPath !== undefined) {
            f.warn(
                spec.draftModelPath === service.model.path
                    ? `${pulumiKey("service.speculative.draftModelPath")} is the served model itself: ${spec.algorithm} drafts with the model's own MTP head without it; remove it.`
                    : `${pulumiKey("service.speculative.draftModelPath")} is set with ${spec.algorithm}: SGLang runs EAGLE with that drafter, not the model's own MTP head.`,
            );
        }
    }
    if (verdict.runs.disableRadixCache && !service.disableRadixCache) {
        f.warn(
            `SGLang ${service.sglangVersion} serves ${service.model.architecture} without the radix cache here (it logs "${verdict.warnings.find((w) => /radix cache/i.test(w)) ?? "Disabling radix cache"}"): ` +
                `set ${pulumiKey("service.disableRadixCache")}: true to say so.`,
        );
    }
    return true;
}

/** The ServerArgs rules that need no box: the transcribed ones, then SGLANG_ENABLE_SPEC_V2 per release. */
export function serverArgsRule(service: ServiceConfig, f: Findings): void {
    const release = sglangRelease(service.sglangVersion);
    const spec = service.speculative;
    // The transcribed rules only for the releases they were read from: another release's own code judges it (versionRule).
    if (release.verified && !transcribedServerArgsRule(service, f)) return;
    const specV2Value = service.environment[SPEC_V2_ENV];
    if (specV2Value !== undefined && !readsSpecV2Env(service.sglangVersion)) {
        // What the stack does for the user (the variable is left out): a notice, not a problem.
        f.note(
            `${pulumiKey(`service.environment.${SPEC_V2_ENV}`)} is not written into the unit: SGLang ${service.sglangVersion} has no ${SPEC_V2_ENV} ` +
                `(removed in ${SPEC_V2_ENV_REMOVED_IN}; spec v2 is its only path, synchronous scheduling is --disable-overlap-schedule): remove it from service.environment.`,
        );
    } else if (specV2Value !== undefined && parseSglangBool(specV2Value) === undefined) {
        f.warn(
            `${pulumiKey(`service.environment.${SPEC_V2_ENV}`)} is "${specV2Value}", which SGLang cannot read: it warns and uses its default (${release.specV2Default ? "on" : "off"} in ${release.version}); write "1" or "0".`,
        );
    }
    // specV2On is true for a release without the variable (its only path is spec v2): no advice there.
    if (spec && !release.specV2Default && ["NEXTN", "EAGLE", "EAGLE3", "STANDALONE"].includes(spec.algorithm) && !specV2On(release, service.environment)) {
        f.warn(
            `SGLang ${release.version} runs speculative decoding without the overlap scheduler unless ${SPEC_V2_ENV} is on: set ${pulumiKey(`service.environment.${SPEC_V2_ENV}`)}: "1" for it (advice, not required).`,
        );
    }
    if (spec && DRAFTER_ALGORITHMS.includes(spec.algorithm) && spec.draftModelPath === undefined) {
        f.warn(
            `${pulumiKey("service.speculative.draftModelPath")} is not set with ${spec.algorithm}: SGLang loads the served model as the drafter; set the drafter's folder.`,
        );
    }
}

/** Algorithms that draft with a separate checkpoint (EAGLE and NEXTN draft with the model's own MTP head without one). */
const DRAFTER_ALGORITHMS = ["EAGLE3", "STANDALONE"];

function valueOfKey(service: ServiceConfig, key: ServerArgsKey, interval: { shown: string } | undefined): unknown {
    switch (key) {
        case "service.mambaSchedulerStrategy":
            return service.mambaSchedulerStrategy;
        case "service.mambaTrackInterval":
            return interval?.shown;
        case "service.environment":
            return service.environment[SPEC_V2_ENV];
        case "service.model.servedName":
            return service.model.servedName;
        default:
            return service.speculative?.[key.slice("service.speculative.".length) as keyof NonNullable<ServiceConfig["speculative"]>];
    }
}

export function shownValue(value: unknown): string {
    if (value === undefined) return "unset";
    return typeof value === "string" ? value : JSON.stringify(value);
}

/** The stack's own hints for a refused algorithm: MTP is not a value, choices are case-sensitive. */
function algorithmHint(algorithm: string, allowed: readonly string[]): string {
    if (algorithm.toUpperCase() === "MTP") return "\n       MTP is not a value: NEXTN uses the model's own MTP head.";
    const caseFix = allowed.find((a) => a.toLowerCase() === algorithm.toLowerCase());
    if (caseFix) return `\n       SGLang's choices are case-sensitive: write ${caseFix}.`;
    if (algorithm === "DFLASH")
        return "\n       DFLASH is a choice from SGLang 0.5.11 on: set service.sglangVersion to 0.5.11 (with its venv on the box) to serve a DFlash drafter; EAGLE3 would load it as an EAGLE drafter, which it is not.";
    return "";
}

/**
 * The flags of extraArgs (either form, `--flag=v` or `--flag v...`), each
 * reported at its flag's element: none may set what the typed config owns,
 * directly or as an argparse abbreviation (a declared setting given again in
 * extraArgs is two sources for one value, refused whichever argparse would
 * keep). Returns whether the release's argparse may judge them too: not when
 * one sets an owned flag (that is the typed config's to say). A flag repeated
 * within extraArgs is argparse's to settle (repeatedFlagsRule).
 */
export function extraArgsRule(service: ServiceConfig, f: Findings): boolean {
    let clean = true;
    for (const given of extraFlags(service.extraArgs)) {
        const { flag, index } = given;
        const path = `service.extraArgs[${index}]`;
        const value = service.extraArgs[index];
        const owner = OWNED_FLAGS[flag];
        if (owner) {
            f.issue(path, value, `${path} sets ${flag}, which the typed config owns: use ${owner} instead and remove it from extraArgs.`);
            clean = false;
            continue;
        }
        // argparse accepts unambiguous prefixes, so `--mem-frac` would still set an owned flag.
        const shadowed = Object.keys(OWNED_FLAGS).find((owned) => owned.startsWith(flag));
        if (shadowed) {
            f.issue(
                path,
                value,
                `${path}: SGLang's argparse reads ${flag} as an abbreviation of ${shadowed}, which the typed config owns: use ${OWNED_FLAGS[shadowed]} instead.`,
            );
            clean = false;
        }
    }
    return clean;
}

/**
 * An option set more than once in extraArgs (`--log-level info ...
 * --log-level debug`, or through an alias, an abbreviation, `--x` then
 * `--no-x`): SGLang's argparse keeps the last and starts (issue 37), so the
 * preview accepts it, and warns, naming every element, since the earlier
 * ones are easy to miss. The release's table says which spellings set one
 * option and whether it accumulates (none does in the releases known here);
 * without a table, a flag repeated under one spelling.
 */
export function repeatedFlagsRule(service: ServiceConfig, f: Findings): void {
    const table = argparseTable(service.sglangVersion);
    const optionOf = (flag: string): string | undefined => {
        const option = table ? argparseOption(table, flag) : undefined;
        if (!option) return flag;
        return option.append ? undefined : (option.flags.find((spelling) => spelling.startsWith("--")) ?? flag);
    };
    const shown = (given: ExtraFlag) => `service.extraArgs[${given.index}] (${shownExtraFlag(given)})`;
    for (const group of repeatedExtraFlags(service.extraArgs, optionOf)) {
        const last = group[group.length - 1]!;
        const earlier = group.slice(0, -1);
        const option = optionOf(last.flag);
        f.warn(
            `${pulumiKey("service.extraArgs")}: ${earlier.map(shown).join(", ")} and ${shown(last)} ${group.length === 2 ? "both" : "all"} set ${option}: ` +
                `SGLang ${service.sglangVersion}'s argparse keeps the last, so the server runs with ${shownExtraFlag(last)}` +
                `${earlier.some((g) => g.values.length > 0) ? " (an earlier value must still pass argparse's check)" : ""}. Remove ${earlier.map((g) => `service.extraArgs[${g.index}]`).join(", ")} to give it once.`,
        );
    }
}

/**
 * extraArgs through the declared release's own options (core/sglang/argparse.ts):
 * what its argparse refuses fails the preview with its text, under the
 * element it is about. A release without a table is not checked, and said.
 */
export function releaseArgparseRule(service: ServiceConfig, f: Findings): void {
    if (service.extraArgs.length === 0) return;
    const table = argparseTable(service.sglangVersion);
    if (!table) {
        f.warn(
            `${pulumiKey("service.extraArgs")} is not checked against SGLang ${service.sglangVersion}'s options (no table for it; ` +
                `the tables are ${argparseVersions().join(", ")}): write one with \`python3 sglang-release/argparse_table.py --version ${service.sglangVersion}\` ` +
                `(it writes core/sglang/argparse-tables.json), or check the flags with \`sglang serve --help\` on the box.`,
        );
        return;
    }
    const refused = judgeExtraArgs(table, service.extraArgs);
    if (!refused) return;
    const path = `service.extraArgs[${refused.index}]`;
    const value = service.extraArgs[refused.index];
    f.issue(
        path,
        value,
        `${path} is ${JSON.stringify(value)}: SGLang ${service.sglangVersion} refuses it at startup with\n       ${refused.error}\n       ` +
            `Fix: write the flag and its values as \`sglang serve --help\` of SGLang ${service.sglangVersion} lists them, or remove it.`,
    );
}
