/**
 * A revision that is not a full commit id is refused at preview, and the
 * message gives the commit it names now, as the line to pin. Naming it needs
 * a read of the Hub (`GET /api/models/{repo}/revision/{rev}`,
 * remote/weights-revision.ts) before the config rules run: the program asks
 * unpinnedRevisions(raw) what to resolve, resolves it, and hands the answers
 * to validateStackConfig (`where.resolvedRevisions`), whose rule
 * (config-rules.ts) builds the message with unpinnedRevisionMessage. Pure.
 */
import { isRecord } from "../is-record";
import { COMMIT_ID, HF_REPO_ID, hubEndpoint, isCommitId, REVISION_TEXT, revisionKind } from "./hf-source";

/** One revision to resolve: where it is declared, and what the Hub is asked. */
export interface RevisionQuery {
    /** `service.model.source.revision`, `servers[1].speculative.draftModelSource.revision`. */
    key: string;
    hf: string;
    revision: string;
    /** Without a trailing slash; the Hub's when the source names none. */
    endpoint: string;
}

/** What the Hub said a revision names: the commit, or why it could not say. */
export type ResolvedRevision = { sha: string } | { error: string };

/** The key of a query in the map of answers: the same repository, revision and endpoint are asked once. */
export function revisionQueryKey(q: Pick<RevisionQuery, "hf" | "revision" | "endpoint">): string {
    return `${q.endpoint} ${q.hf} ${q.revision}`;
}

/** The sources of a raw stack config (service, or each of servers) whose revision is not a commit id and could be asked about. */
export function unpinnedRevisions(raw: unknown): RevisionQuery[] {
    if (!isRecord(raw)) return [];
    const servers: Array<[string, unknown]> = Array.isArray(raw.servers)
        ? raw.servers.map((s, i): [string, unknown] => [`servers[${i}]`, s])
        : raw.service !== undefined
          ? [["service", raw.service]]
          : [];
    const out: RevisionQuery[] = [];
    for (const [key, service] of servers) {
        if (!isRecord(service)) continue;
        const model = isRecord(service.model) ? service.model.source : undefined;
        const drafter = isRecord(service.speculative) ? service.speculative.draftModelSource : undefined;
        for (const [at, source] of [
            [`${key}.model.source`, model],
            [`${key}.speculative.draftModelSource`, drafter],
        ] as const) {
            if (!isRecord(source) || typeof source.hf !== "string" || typeof source.revision !== "string") continue;
            if (!HF_REPO_ID.test(source.hf) || !REVISION_TEXT.test(source.revision) || isCommitId(source.revision)) continue;
            const endpoint = hubEndpoint({ endpoint: typeof source.endpoint === "string" ? source.endpoint : undefined });
            out.push({ key: `${at}.revision`, hf: source.hf, revision: source.revision, endpoint });
        }
    }
    return out;
}

/**
 * The refusal of a revision that is not a full commit id, naming the key,
 * the value and the fix: the commit it names now (when the preview could ask
 * the Hub), as the line to pin.
 */
export function unpinnedRevisionMessage(q: RevisionQuery, resolved?: ResolvedRevision): string {
    const kind = revisionKind(q.revision);
    const head = `${q.key} is "${q.revision}"`;
    if (kind === "upper-case commit") {
        return `${head}, a commit id in upper case: the Hub and the revision folder name commits in lower case: pin it as\n    revision: ${q.revision.toLowerCase()}`;
    }
    const why =
        kind === "abbreviated commit"
            ? "an abbreviated commit id: the stack pins weights to a full commit (a short id can come to name two)"
            : "a branch or tag name: it moves, and the stack pins weights to one commit, so that the same config always serves the same bytes";
    if (resolved && "sha" in resolved && COMMIT_ID.test(resolved.sha)) {
        return `${head}, ${why}. At ${q.endpoint}, ${q.hf} "${q.revision}" is commit ${resolved.sha} now: pin it with\n    revision: ${resolved.sha}`;
    }
    const how = `\`git ls-remote ${q.endpoint}/${q.hf} ${q.revision}\` prints it`;
    if (resolved && "error" in resolved) {
        return `${head}, ${why}. Asking ${q.endpoint} what it names failed (${resolved.error}): pin its full 40-hex commit id (${how}).`;
    }
    return `${head}, ${why}: pin its full 40-hex commit id (the preview names it when it can reach ${q.endpoint}; ${how}).`;
}
