/**
 * Whether the declared server may serve, judged once in one order for the
 * preview (check) and the rollout (apply): the box's facts, the drafter
 * folder and its pinned digest, then SGLang's own verdict (`judgeServer`).
 * At the preview, a declared source's revision not staged yet is judged by
 * its config.json from the Hub (source-config.ts).
 *
 * SGLang's own verdict at preview (core/sglang/verdict.ts): the declared
 * release's code, from its wheel in install.sh's cache (installed once, with a
 * progress line; offline without it, a failure saying how to fill it), run
 * here on the command line and environment the unit would have, with the box's
 * config.json in a local stand-in folder and its declared GPUs in the
 * hardware stubs. A verdict is kept by its request's digest, so a preview of
 * an unchanged server runs nothing.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import {
    ReleaseVerdict,
    verdictCase,
    VerdictFailure,
    verdictFailures,
    verdictKey,
    verdictNotice,
    verdictOf,
    VerdictRequest,
    verdictRequest,
} from "../../core/sglang/verdict";
import { thirdPartyEnvironment } from "../../core/secrets/third-party-env";
import { sha256 } from "../../core/digest";
import { serviceFromUnit } from "../../core/unit/systemd-unit";
import { ensureInstalled, isInstalled, releaseCacheRoot, releaseDir, runOracle, siteProblems } from "../../sglang-release/oracle";
import { type BoxContradiction, type BoxFactsRead, drafterDigestRefusal, drafterPath } from "../../core/box/box-facts";
import { COMPUTE_CAPABILITY } from "../../core/box/gpu-facts";
import { verdictFit } from "../../core/box/resolved-fit";
import type { ProviderRun } from "../provider-run";
import { say } from "../say";
import { boxFailures, drafterFactsOf, type PythonFacts } from "./facts";
import { withSourceConfig } from "./source-config";
import type { ServiceProps } from "./props";

/** What the box and SGLang say of a declared server, before anything on the box changes. */
export interface Judgement {
    /** The box's facts the judgement was made with: the refresh's at the preview (undefined: none read), this run's at the rollout. */
    facts: BoxFactsRead | undefined;
    /** The drafter folder's facts, when there is a drafter and the box's facts were read. */
    drafter: BoxFactsRead | undefined;
    /** Where the box contradicts the declared server (core/box/box-facts.ts). */
    box: BoxContradiction[];
    /** The pinned drafter's refusal (service.speculative.draftModelDigest), then SGLang's own. */
    refused: VerdictFailure[];
}

/**
 * The one judgement of a declared server, at the preview and at the rollout
 * alike: the box's facts (`facts`) against the declaration, then the drafter
 * folder (read once per run, only when the box's facts were), its pinned
 * digest, then SGLang's own verdict on what the unit runs. Where the two
 * differ, by design: the preview says what it finds (the drafter's digest to
 * pin, the verdict's notices); it leaves a drafter folder it cannot read to
 * the rollout, which refuses one a digest pins; and it asks SGLang only when
 * nothing refused the server before (`refusedBefore`: the unit's owner), the
 * rollout whenever the box can serve it, to name every refusal. The rollout
 * reads no drafter once the box cannot serve the server (it ends there).
 */
export async function judgeServer(
    run: ProviderRun,
    props: ServiceProps,
    read: BoxFactsRead | undefined,
    at: { stage: "preview"; refusedBefore: boolean; python?: PythonFacts } | { stage: "rollout" },
): Promise<Judgement> {
    const expect = props.expectBox;
    const preview = at.stage === "preview";
    const python = preview ? at.python : undefined;
    // At the preview, a declared source's folder not staged yet, or one the box will not read, is judged by its revision's
    // config.json from the Hub (source-config.ts); the rollout stages it first.
    const model = preview ? await withSourceConfig(run, props, "model", read, python) : { read };
    const facts = model.read;
    const box = boxFailures(expect, facts);
    if (!preview && box.length > 0) return { facts, drafter: undefined, box, refused: [] };
    const drafterRead = facts && !("error" in facts) ? await drafterFactsOf(run, run.remoteFor(props.connection, "server"), expect) : undefined;
    const drafterSource = preview ? await withSourceConfig(run, props, "drafter", drafterRead) : { read: drafterRead };
    const drafter = drafterSource.read;
    const fromHub = [model.fromHub, drafterSource.fromHub].filter((f): f is string => f !== undefined);
    const drafterKnown = drafter !== undefined && !("error" in drafter);
    const pinned = preview && !drafterKnown ? undefined : drafterDigestRefusal(expect, drafter);
    if (preview && !pinned && drafterKnown && expect?.drafterDigest === undefined && drafter.folderDigest) {
        say(`[${props.unitName}] the drafter folder ${drafterPath(expect)} has digest ${drafter.folderDigest} (service.speculative.draftModelDigest pins it)`);
    }
    const refused: VerdictFailure[] = pinned ? [pinned] : [];
    // SGLang's own verdict (the declared release's code, run here with the box's config.json), after the stack's rules.
    const asks = preview ? !at.refusedBefore && box.length === 0 && !pinned : true;
    if (asks) refused.push(...(await previewVerdict(props, facts, drafter, { notices: preview })));
    // What the box does not hold yet was judged by the Hub's config.json: a refusal that comes of it says which revision's
    // (not one the box's own read gives alone: its python, its release).
    if (fromHub.length === 0) return { facts, drafter, box, refused };
    const judgedWith = <T extends { reason: string }>(r: T): T => ({ ...r, reason: `${r.reason} (judged with ${fromHub.join(" and ")})` });
    // The box's own read: of a model folder it would not read, what it says of the python alone (the folder then counts as not there yet).
    const own = read && "error" in read && python && model.fromHub ? { ...python, model: "missing" as const } : read;
    const boxAlone = new Set(boxFailures(expect, own).map((f) => f.reason));
    return { facts, drafter, box: box.map((f) => (boxAlone.has(f.reason) ? f : judgedWith(f))), refused: refused.map(judgedWith) };
}

/** The release's code could not be had (not cached, and the install failed): the failure says how to fill the cache. */
export class VerdictUnavailable extends Error {}

/** The file a verdict is kept in: by its request and by the judge's own files (oracle.py, the stubs, DEPS), so a changed judge asks again. */
export function verdictFile(request: VerdictRequest): string {
    return path.join(releaseCacheRoot(), "verdicts", `${verdictKey(request, judgeDigest())}.json`);
}

function judgeDigest(): string {
    const root = releaseDir();
    const files = (dir: string): string[] =>
        fs
            .readdirSync(dir, { withFileTypes: true })
            .filter((e) => e.name !== "__pycache__")
            .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]))
            .sort();
    const parts = ["oracle.py", "DEPS", "install.sh", "stubs"].flatMap((p) => {
        const full = path.join(root, p);
        return fs.statSync(full).isDirectory() ? files(full) : [full];
    });
    return sha256(parts.map((f) => `${path.relative(root, f)}\0${fs.readFileSync(f, "utf8")}`).join("\0"));
}

/** A kept verdict, marked as used now (its mtime) so pruning keeps it. */
function cached(file: string): ReleaseVerdict | undefined {
    try {
        const v = JSON.parse(fs.readFileSync(file, "utf8")) as ReleaseVerdict;
        if (v.status !== "ok" && v.status !== "refused") return undefined;
        // Kept before the verdict carried what the release resolves (the fit reads it): asked again.
        if (v.status === "ok" && v.resolved === undefined) return undefined;
        try {
            const now = new Date();
            fs.utimesSync(file, now, now);
        } catch {
            // A cache this user may read but not write: the verdict still stands.
        }
        return v;
    } catch {
        return undefined;
    }
}

/** Verdicts kept (a few KB each): a new one beyond this removes the least recently used. */
export const VERDICTS_KEPT = 500;

/** Removes the least recently used verdict files of `dir` beyond `keep` (by mtime, which a use renews); how many it removed. */
export function pruneVerdicts(dir: string, keep: number): number {
    const files = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".json"))
        .map((f) => {
            const full = path.join(dir, f);
            try {
                return { full, used: fs.statSync(full).mtimeMs };
            } catch {
                return undefined;
            }
        })
        .filter((f): f is { full: string; used: number } => f !== undefined)
        .sort((a, b) => b.used - a.used);
    const gone = files.slice(keep);
    for (const f of gone) fs.rmSync(f.full, { force: true });
    return gone.length;
}

/**
 * The release's code in the cache, installed first when missing, and rebuilt
 * when its site fails the check against its wheels' RECORDs (a site that
 * passes runs no install.sh: a hand-copied cache works offline). pip runs with the allowlisted environment (core/secrets/third-party-env.ts).
 */
async function ensureRelease(version: string, label: string): Promise<void> {
    const installed = isInstalled(version);
    if (installed && siteProblems(version).length === 0) return;
    if (!installed) {
        say(
            `${label} SGLang ${version}'s own code is not cached here: installing its wheel from the package index into ${releaseCacheRoot()} (once; about 20-60 s)`,
        );
    }
    try {
        for (const rebuilt of await ensureInstalled([version], thirdPartyEnvironment(process.env, "pip"))) say(`${label} ${rebuilt}`);
    } catch (e) {
        const why = (
            (e as Error).message
                .split("\n")
                .filter((l) => l.trim() !== "")
                .pop() ?? ""
        ).trim();
        throw new VerdictUnavailable(
            `SGLang ${version}'s own code is not in ${releaseCacheRoot()} and could not be installed (${why}): ` +
                `run \`bash ${path.relative(process.cwd(), path.join(releaseDir(), "install.sh")) || "sglang-release/install.sh"} ${version}\` where the package index is reachable ` +
                `(pip's PIP_INDEX_URL or PIP_FIND_LINKS pick another source), or copy ${releaseCacheRoot()}/${version} and deps from a machine that has them.`,
        );
    }
}

/** The release's verdict on the request: from the cache, or by running its code once (`kept` says which). */
export async function releaseVerdict(request: VerdictRequest, label: string): Promise<ReleaseVerdict & { kept?: true }> {
    const file = verdictFile(request);
    const kept = cached(file);
    if (kept) return { ...kept, kept: true };
    await ensureRelease(request.version, label);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-verdict-"));
    try {
        const model = path.join(dir, "model");
        fs.mkdirSync(model);
        fs.writeFileSync(path.join(model, "config.json"), request.model.configJson);
        let drafter: string | undefined;
        if (request.drafter) {
            drafter = path.join(dir, "drafter");
            fs.mkdirSync(drafter);
            fs.writeFileSync(path.join(drafter, "config.json"), request.drafter.configJson);
        }
        const standIns = { model, ...(drafter ? { drafter } : {}) };
        const [answer] = await runOracle(request.version, [verdictCase(request, standIns)], {
            jobs: 1,
            env: thirdPartyEnvironment(process.env, "release-code"),
        });
        const verdict = verdictOf(answer!, request, standIns);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, JSON.stringify(verdict));
        fs.renameSync(tmp, file);
        pruneVerdicts(path.dirname(file), VERDICTS_KEPT);
        return verdict;
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/**
 * The preview's verdict on `news` with the box's facts (the refresh's, or
 * those check read again): SGLang's refusal as failures, what it says it will
 * run as a notice. Nothing to judge with (a first preview, facts not read, a
 * drafter whose config.json cannot be read): a notice, no failure. The
 * release's code failing to run at all here is a notice too, and the stack's
 * own rules stand alone.
 */
export async function previewVerdict(
    news: ServiceProps,
    facts: BoxFactsRead | undefined,
    drafter: BoxFactsRead | undefined,
    opts: { notices: boolean } = { notices: true },
): Promise<VerdictFailure[]> {
    const notice = (text: string) => opts.notices && say(text);
    const expect = news.expectBox;
    const label = `[${news.unitName}]`;
    if (!expect || (facts && "error" in facts)) return [];
    if (!facts) {
        notice(`${label} SGLang ${expect.sglangVersion}'s own verdict comes at the rollout, which reads the box's config.json before anything changes`);
        return [];
    }
    const drafterConfigJson = drafter === undefined || "error" in drafter ? undefined : drafter.configJson;
    const request = verdictRequest({
        version: expect.sglangVersion,
        unitText: news.unitText,
        gpus: {
            // The box's GPUs up to the server's last: a unit scoped to its GPUs (CUDA_VISIBLE_DEVICES, in unitText's environment) narrows them to the server's, as on the box.
            count: Math.max(...news.gpuIndices) + 1,
            ...(expect.memory.gpuMemoryMiB !== undefined ? { memoryMiB: expect.memory.gpuMemoryMiB } : {}),
            ...(news.gpuName !== undefined ? { name: news.gpuName } : {}),
            // Read on the box by the GpuHost; unknown in a preview that reads the GPUs anew (a placeholder), or absent in a state from before.
            ...(news.gpuCapability !== undefined && COMPUTE_CAPABILITY.test(news.gpuCapability) ? { computeCapability: news.gpuCapability } : {}),
        },
        ...(facts.configJson !== undefined ? { modelConfigJson: facts.configJson } : {}),
        ...(drafterConfigJson !== undefined ? { drafterConfigJson } : {}),
    });
    if ("unavailable" in request) {
        notice(`${label} SGLang ${expect.sglangVersion}'s own verdict waits: ${request.unavailable}; the rollout reads the box before anything stops`);
        return [];
    }
    let verdict: ReleaseVerdict & { kept?: true };
    try {
        verdict = await releaseVerdict(request, label);
    } catch (e) {
        if (e instanceof VerdictUnavailable) return [{ property: "service.sglangVersion", reason: e.message }];
        notice(`${label} SGLang ${expect.sglangVersion}'s own code could not run here (${lastErrorLine(e)}); the stack's own rules judged this server`);
        return [];
    }
    // Said at every preview, also from a kept verdict: one line per server.
    const says = verdictNotice(verdict, expect.sglangVersion);
    if (says) notice(`${label} ${says}`);
    const refusals = verdictFailures(verdict, request, serviceFromUnit(news.unitText).fields.extraArgs);
    // Accepted: whether the server it resolves fits the box (the memory fraction it picks, its GPUs, what stays in CPU memory).
    return refusals.length > 0 ? refusals : verdictFit(verdict, request, expect, facts);
}

/** The exception line a Python traceback ends with (or the first line of the message). */
function lastErrorLine(e: unknown): string {
    const lines = String((e as Error).message ?? e)
        .split("\n")
        .filter((l) => l.trim() !== "");
    return ([...lines].reverse().find((l) => /Error|error:/.test(l)) ?? lines[0] ?? "").trim().slice(0, 300);
}
