/**
 * The box's facts about a declared server (core/box/box-facts.ts: its
 * python's SGLang, the model folder's config.json and size, a drafter
 * folder's): one command per folder, read once per engine run (the run's
 * reads, providers/run-reads.ts) and shared by the refresh, check and the
 * rollout; and what the stack makes of them.
 */
import {
    BoxContradiction,
    boxContradictions,
    BoxExpectations,
    type BoxFacts,
    BoxFactsRead,
    boxFactsCommand,
    drafterPath,
    parseBoxFacts,
} from "../../core/box/box-facts";
import type { VenvPlan } from "../../core/venv/venv-layout";
import type { RemoteHost } from "../../remote/remote-host";
import type { ProviderRun } from "../provider-run";
import { boxKey } from "../run-reads";
import type { ServiceOutputs, ServiceProps } from "./props";

/** Reads the box's facts about the declared server (core/box/box-facts.ts): one command, every time. */
export async function readBoxFacts(remote: RemoteHost, expect: BoxExpectations): Promise<BoxFactsRead> {
    // A venv the stack stages runs only with the stack's marker in it (the read-only gate allows a --venv-root python only so).
    const r = await remote.run(boxFactsCommand(expect.python, expect.modelPath, expect.stagedVenv !== undefined));
    if (r.code !== 0) return { error: `${expect.python} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 300)}` };
    try {
        return parseBoxFacts(r.stdout);
    } catch (e) {
        return { error: (e as Error).message };
    }
}

/**
 * The box's facts for `expect`, read once per engine run: the first asks the
 * box, every later ask of the run (the refresh, check, the rollout, another
 * server with the same python and folder) gets that answer. An answer that
 * says the facts could not be read is not kept. `fresh`: read again (the
 * rollout staged the venv).
 */
export function boxFactsOf(run: ProviderRun, remote: RemoteHost, expect: BoxExpectations, opts: { fresh?: boolean } = {}): Promise<BoxFactsRead> {
    const key = ["box-facts", boxKey(remote), expect.python, expect.modelPath, expect.stagedVenv !== undefined ? "staged" : ""].join("\0");
    return run.reads.once(key, () => readBoxFacts(remote, expect), { keep: (facts) => !("error" in facts), fresh: opts.fresh });
}

/** The drafter folder's facts (its config.json, its digest): the same read as the model's, on the drafter's folder, once per run. Undefined without a drafter. */
export async function drafterFactsOf(run: ProviderRun, remote: RemoteHost, expect: BoxExpectations | undefined): Promise<BoxFactsRead | undefined> {
    const path = drafterPath(expect);
    if (!expect || path === undefined) return undefined;
    return boxFactsOf(run, remote, { ...expect, modelPath: path });
}

/** Reads the model's and the drafter's folders again, for the rest of this run: the rollout just staged them (issue 33). */
export async function readFoldersAgain(run: ProviderRun, remote: RemoteHost, expect: BoxExpectations): Promise<void> {
    const drafter = drafterPath(expect);
    await Promise.all([
        boxFactsOf(run, remote, expect, { fresh: true }),
        ...(drafter !== undefined ? [boxFactsOf(run, remote, { ...expect, modelPath: drafter }, { fresh: true })] : []),
    ]);
}

/**
 * The drafter folder's digest now (core/box/box-facts.ts folderDigest), as
 * this run read it. Undefined without a drafter, or when the folder cannot
 * be read (the rollout's own checks say why).
 */
export async function drafterDigestOf(run: ProviderRun, remote: RemoteHost, expect: BoxExpectations | undefined): Promise<string | undefined> {
    const facts = await drafterFactsOf(run, remote, expect);
    return facts === undefined || "error" in facts ? undefined : facts.folderDigest;
}

/**
 * The box's facts for the preview's check of `news`: those the refresh read
 * (olds.boxFacts), which are about the old python and model folder. When the
 * declared python or model path changed (an upgrade into another venv, a new
 * model), the facts are read for the new ones (once per run), so the preview
 * judges the venv and folder the rollout will start, not the ones it
 * replaces. Nothing is read when the refresh read nothing (a first preview, a
 * box not reached).
 */
export async function factsForCheck(run: ProviderRun, olds: Partial<ServiceOutputs>, news: ServiceProps): Promise<BoxFactsRead | undefined> {
    const read = olds.boxFacts;
    const before = olds.expectBox;
    const expect = news.expectBox;
    if (!read || !before || !expect) return read;
    if (before.python === expect.python && before.modelPath === expect.modelPath) return read;
    return boxFactsOf(run, run.remoteFor(news.connection, "server"), expect);
}

/** What a box-facts read says of the declared python rather than of the folder it read: its SGLang release, and whether it is there. */
export type PythonFacts = Pick<BoxFacts, "sglangVersion" | "python">;

/**
 * The declared python's facts as the refresh read them with the deployed
 * model folder (olds.boxFacts), for a preview that declares another folder:
 * the same python read the same way says the same of itself, whichever
 * folder the read named. Undefined when the python (or how it is read)
 * changed, or the refresh read nothing. A new folder the box will not read
 * (the read-only key's gate pins only the deployed folders) is then judged
 * by the Hub's config.json with these (source-config.ts).
 */
export function pythonFactsForCheck(olds: Partial<ServiceOutputs>, news: ServiceProps): PythonFacts | undefined {
    const read = olds.boxFacts;
    const before = olds.expectBox;
    const expect = news.expectBox;
    if (!read || "error" in read || !before || !expect) return undefined;
    if (before.python !== expect.python || (before.stagedVenv !== undefined) !== (expect.stagedVenv !== undefined)) return undefined;
    return { sglangVersion: read.sglangVersion, ...(read.python !== undefined ? { python: read.python } : {}) };
}

/**
 * Whether the rollout stages the declared release's venv before it stops
 * anything (remote/venv-staging.ts): service.venv, and the box's facts say its
 * python is not there yet or its staging was cut short (the contradictions
 * let that through only for a venv the stack stages).
 */
export function stagesRelease(props: ServiceProps, facts: BoxFactsRead | undefined): props is ServiceProps & { venv: VenvPlan } {
    return props.venv !== undefined && facts !== undefined && !("error" in facts) && (facts.python === "missing" || facts.python === "staging");
}

/** The contradictions between what is declared and what the box says (none when the facts were not read). */
export function boxFailures(expect: BoxExpectations | undefined, facts: BoxFactsRead | undefined): BoxContradiction[] {
    if (!expect || !facts) return [];
    if ("error" in facts) return [{ property: "service.python", reason: `service.python ${expect.python} cannot run on the box: ${facts.error}` }];
    return boxContradictions(expect, facts);
}

/** The rollout's refusal of a box that cannot serve the declared server, naming every contradiction. */
export function boxCannotServe(unitName: string, failures: BoxContradiction[]): Error {
    return new Error(
        `[${unitName}] the box cannot serve the declared config; nothing on the box was changed:\n` + failures.map((f) => `  - ${f.reason}`).join("\n"),
    );
}

/**
 * Before a rollout touches anything: the box must have what the declared
 * server needs (its facts as this run read them; `fresh`: read again). Throws
 * naming every contradiction; nothing on the box changed.
 */
export async function assertBoxServes(
    run: ProviderRun,
    remote: RemoteHost,
    unitName: string,
    expect: BoxExpectations | undefined,
    opts: { fresh?: boolean } = {},
): Promise<BoxFactsRead | undefined> {
    if (!expect) return undefined;
    const facts = await boxFactsOf(run, remote, expect, opts);
    const failures = boxFailures(expect, facts);
    if (failures.length > 0) throw boxCannotServe(unitName, failures);
    return facts;
}
