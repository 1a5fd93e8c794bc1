import type { CompleteProvider } from "./resource-provider";
import { describeFailure } from "../core/readiness/readiness";
import { redact } from "../core/secrets/redact";
import { servedByThisProcess } from "./context";
import { deployApiKey } from "./deploy-secrets";
import { changedKeys } from "./diff-inputs";
import type { ProviderRun } from "./provider-run";
import type { ReadinessOutputs, ReadinessProps } from "./readiness-check-props";
import { verifyServing, waitServing } from "./serving";
import { journalPosition } from "../remote/readiness-wait";

/**
 * Waits (within the startup budget) until the server serves, then runs the
 * chat and speculative checks. The service's rollout already waited for the
 * same checks, so on a healthy box this returns within a poll or two.
 */
async function check(run: ProviderRun, declared: ReadinessProps): Promise<ReadinessOutputs> {
    // The key authenticates the requests and is never recorded: the outputs are built from `recorded`.
    const { apiKey: _stored, ...recorded } = declared;
    const inputs = { ...recorded, apiKey: declared.requireApiKey ? deployApiKey() : undefined };
    if (inputs.servingVerified?.run === run.id && inputs.servingVerified.revision === inputs.revision) {
        // The rollout of this revision was verified serving (readiness, checks, healthy
        // window) moments ago, in this run, and reported it (the service's servingVerified
        // output, taken as an input here): confirm it still serves, quietly.
        const serving = await verifyServing(inputs);
        if (serving.healthy && serving.speculativeActive !== false) {
            return {
                ...recorded,
                ready: true,
                liveServerArgs: (serving.liveArgs as Record<string, unknown> | null) ?? null,
                speculativeActive: serving.speculativeActive,
            };
        }
    }
    const remote = run.remoteFor(inputs.connection, "server");
    // The server's ready line was written before this check began (the rollout
    // waited for it), so GET /health = 200 alone is believed here.
    const since = await journalPosition(remote, inputs.unitName);
    const readiness = await waitServing(remote, inputs, since, { healthOnlyGracePolls: 0 });
    if (!readiness.ok) {
        throw new Error(
            redact(
                `${inputs.unitName} at ${inputs.endpoint} is not serving: ${describeFailure(readiness.cause)}\n  Last journal lines:\n    ` +
                    readiness.lastJournalLines.slice(-20).join("\n    "),
                [inputs.apiKey],
            ),
        );
    }
    const serving = await verifyServing(inputs);
    return {
        ...recorded,
        ready: true,
        liveServerArgs: (serving.liveArgs as Record<string, unknown> | null) ?? null,
        speculativeActive: serving.speculativeActive,
    };
}

/** The ReadinessCheck's verbs for one run. */
export const readinessCheckProvider = (run: ProviderRun): CompleteProvider<ReadinessProps, ReadinessOutputs> => ({
    async check(_olds, news) {
        return { inputs: news };
    },
    async diff(_id, olds, news) {
        const changed = changedKeys(olds, news, [
            "providerVersion",
            "connection",
            "unitName",
            "endpoint",
            "revision",
            "servedModelName",
            "speculativeAlgorithm",
            "readiness",
        ]);
        const apiKeyChanged = (olds.requireApiKey ?? olds.apiKey !== undefined) !== (news.requireApiKey ?? false);
        const notServing = olds.ready === false || olds.speculativeActive === false;
        return { changes: changed.length > 0 || apiKeyChanged || notServing, replaces: [] };
    },
    async create(inputs) {
        const outs = await check(run, inputs);
        return { id: `${inputs.endpoint}#${inputs.unitName}`, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        // /server_info through the box: the refresh needs no API key (the read-only key's gate allows it).
        const serving = await verifyServing(props, run.remoteFor(props.connection, "server"), { shared: run.looks });
        // A state of an older version held the key (encrypted), and servingVerified under its name before issue 22,
        // `gatePassed` (an earlier run's: it means nothing now): the refresh records neither, in the outputs or the inputs.
        const { apiKey: _stored, gatePassed: _older, ...recorded } = props as ReadinessOutputs & { gatePassed?: unknown };
        const { ready: _r, liveServerArgs: _l, speculativeActive: _s, ...inputs } = recorded;
        return {
            id,
            props: {
                ...recorded,
                ready: serving.healthy,
                liveServerArgs: (serving.liveArgs as Record<string, unknown> | null) ?? null,
                speculativeActive: serving.speculativeActive,
            },
            inputs: { ...inputs, requireApiKey: props.requireApiKey ?? props.apiKey !== undefined },
        };
    },
    async update(_id, _olds, news) {
        return { outs: await check(run, news) };
    },
    async delete() {
        // A check owns nothing on the box.
    },
});

/** What the provider module stored in state calls (components/dynamic-provider.ts). */
export const provider = servedByThisProcess(readinessCheckProvider);
