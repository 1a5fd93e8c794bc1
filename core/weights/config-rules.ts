/**
 * The config rules about pinned weights (service.model.source,
 * service.speculative.draftModelSource): each revision a full commit id, the
 * refusal naming the commit it resolves to now when the preview could ask
 * the Hub (revision-pins.ts); service.weights only where a source uses it.
 * The shape rules (a folder or a source, exactly one) are the schema's
 * (model-folders.ts); the token is never config: HF_TOKEN in
 * service.environment is refused by core/secrets/config-rules.ts
 * (environmentRule), and a `token` key in a source by the schema.
 */
import type { ServiceConfig, WeightsSourceConfig } from "../config/schema";
import type { Findings } from "../config/findings";
import { hubEndpoint, isCommitId } from "./hf-source";
import { ResolvedRevision, revisionQueryKey, unpinnedRevisionMessage } from "./revision-pins";

/** The declared sources of a service, with the key each is declared at. */
export function declaredSources(service: Pick<ServiceConfig, "model" | "speculative">): Array<{ key: string; source: WeightsSourceConfig }> {
    const out: Array<{ key: string; source: WeightsSourceConfig }> = [];
    if (service.model.source) out.push({ key: "service.model.source", source: service.model.source });
    if (service.speculative?.draftModelSource) out.push({ key: "service.speculative.draftModelSource", source: service.speculative.draftModelSource });
    return out;
}

/** Each declared source pinned to a full commit; service.weights set only where a source is declared. */
export function weightsRule(service: ServiceConfig, f: Findings, resolved?: ReadonlyMap<string, ResolvedRevision>): void {
    const sources = declaredSources(service);
    for (const { key, source } of sources) {
        if (isCommitId(source.revision)) continue;
        const query = { key: `${key}.revision`, hf: source.hf, revision: source.revision, endpoint: hubEndpoint(source) };
        f.issue(query.key, source.revision, unpinnedRevisionMessage(query, resolved?.get(revisionQueryKey(query))));
    }
    if (service.weights !== undefined && sources.length === 0) {
        f.note(
            "service.weights is set, but neither service.model.source nor service.speculative.draftModelSource is declared: " +
                "it applies only to the weights the stack stages from a source.",
        );
    }
}
