// Whether a server serves, for the providers: start a unit and run the
// readiness wait (remote/readiness-wait.ts), run the wait without a start, and
// take a quick look (/health and /server_info). The wait itself lives in
// remote/. ("Gate" names only the read-only key's forced command, gate/.)
import type { ReadinessConfig } from "../core/config/schema";
import type { AttemptContext } from "../core/readiness/readiness";
import { DEFAULT_ACCEPT_LENGTH_DROP_LIMIT, DEFAULT_THROUGHPUT_DROP_LIMIT } from "../core/serving/serving-figures";
import type { HeldFigures } from "../core/serving/serving-history";
import { SHIPPED_SERVING_PROMPTS } from "../core/serving/serving-prompts";
import type { ServingQualitySettings } from "../remote/checks/post-ready-check";
import { checkSpeculativeActive } from "../core/serving/chat-check";
import { LiveServerArgs, normalizeServerInfo } from "../core/sglang/args";
import { endpointUrl, getServerInfo, httpGetJson } from "../remote/probe";
import { JournalPosition, journalPosition, ReadinessResult, readJournalTail, waitUntilReady } from "../remote/readiness-wait";
import { containerNotRunning, type RemoteHost, type RemoteRunner } from "../remote/remote-host";
import { redact } from "../core/secrets/redact";
import { say } from "./say";
import type { Look, ServerLooks } from "./server-looks";
import { readServerInfoOnBox } from "./server-info-on-box";

/** What the readiness wait needs to know about a server. */
export interface ServedServer {
    unitName: string;
    endpoint: string;
    apiKey?: string;
    servedModelName: string;
    speculativeAlgorithm?: string;
    readiness: ReadinessConfig;
    /**
     * A rollout's new config: only it goes through the serving-quality gate
     * (remote/checks/serving-quality.ts), held to the figures
     * core/serving/serving-history.ts chooses when there are any: its own last ones
     * when it was verified before, else the current last good. A rollback to the previous config, and a
     * wait for a server that runs the declared config already, judge its
     * serving only (health, chat, speculation): the previous config served.
     */
    newConfig?: { lastGood?: HeldFigures };
}

/**
 * Waits until the server serves (health, ready line, chat and speculative
 * checks), reading the journal from `since` on.
 */
export function waitServing(
    remote: RemoteHost,
    server: ServedServer,
    since: JournalPosition,
    opts: { healthOnlyGracePolls?: number; minHealthyMs?: number; attempt?: AttemptContext } = {},
): Promise<ReadinessResult> {
    return waitUntilReady({
        healthOnlyGracePolls: opts.healthOnlyGracePolls,
        minHealthyMs: opts.minHealthyMs,
        attempt: opts.attempt,
        remote,
        unit: server.unitName,
        endpoint: server.endpoint,
        apiKey: server.apiKey,
        startupTimeoutMs: server.readiness.startupTimeoutSeconds * 1000,
        pollIntervalMs: server.readiness.pollIntervalSeconds * 1000,
        probeTimeoutMs: server.readiness.probeTimeoutSeconds * 1000,
        since,
        onProgress: (message) => say(redact(message, [server.apiKey])),
        expectedSpeculative: server.speculativeAlgorithm,
        ...(server.newConfig
            ? {
                  quality: qualitySettings(server.readiness),
                  ...(server.newConfig.lastGood ? { lastGood: server.newConfig.lastGood.figures, lastGoodOrigin: server.newConfig.lastGood.origin } : {}),
              }
            : {}),
        chatCheck: server.readiness.chatCheck,
        servedModelName: server.servedModelName,
    });
}

/** The serving-quality gate's settings from the readiness section; a state written before them: the prompt set off, the default limits. */
export function qualitySettings(readiness: Partial<ReadinessConfig>): ServingQualitySettings {
    return {
        prompts: readiness.servingCheck === true ? (readiness.servingPrompts ?? SHIPPED_SERVING_PROMPTS) : null,
        limits: {
            ...(readiness.acceptLengthFloor !== undefined ? { acceptLengthFloor: readiness.acceptLengthFloor } : {}),
            acceptLengthDropLimit: readiness.acceptLengthDropLimit ?? DEFAULT_ACCEPT_LENGTH_DROP_LIMIT,
            throughputDropLimit: readiness.throughputDropLimit ?? DEFAULT_THROUGHPUT_DROP_LIMIT,
        },
    };
}

/** readiness.minHealthySeconds of a state written before the healthy window existed: none. */
export function minHealthySeconds(readiness: Partial<ReadinessConfig>): number {
    return readiness.minHealthySeconds ?? 0;
}

/**
 * Starts the unit and waits until it serves and stays healthy for
 * readiness.minHealthySeconds: the journal position is taken before the
 * start, so even a crash in the first second is read.
 */
export async function startAndWait(remote: RemoteHost, server: ServedServer, attempt?: AttemptContext): Promise<ReadinessResult> {
    const since = await journalPosition(remote, server.unitName);
    // A unit that hit its start limit (StartLimitBurst) refuses to start until reset.
    await remote.run(["systemctl", "reset-failed", server.unitName]);
    const start = await remote.run(["systemctl", "start", server.unitName]);
    if (start.code !== 0) {
        // systemd refused the unit (Job for ... failed): a failed start for the rollout to judge, not an escape from it.
        const reason = `exit ${start.code} from systemctl start ${server.unitName}\n${(start.stderr || start.stdout).trim()}`;
        const message = `[${server.unitName}] systemd refused to start it: ${reason}`;
        say(redact(message, [server.apiKey]));
        const lastJournalLines = await readJournalTail(remote, server.unitName, 30).catch(() => []);
        return { ok: false, cause: { kind: "start-refused", reason }, message, lastJournalLines, phaseTimeline: [], startLines: [] };
    }
    const window = minHealthySeconds(server.readiness);
    say(
        `[${server.unitName}] started${attempt ? ` (attempt ${attempt.attempt} of ${attempt.attempts})` : ""}; ` +
            `waiting for GET ${server.endpoint}/health = 200 (budget ${server.readiness.startupTimeoutSeconds} s)` +
            (window > 0 ? `, then ${window} s of steady health` : ""),
    );
    return waitServing(remote, server, since, { minHealthyMs: window * 1000, attempt });
}

export interface Serving {
    /** GET /health answered 200. */
    healthy: boolean;
    liveArgs: LiveServerArgs | null;
    speculativeActive: boolean | null;
    /** /server_info's avg_spec_accept_length (the lowest over DP ranks) when speculation is active and reports one. */
    acceptLength: number | null;
}

/**
 * A quick look at a running server: /health and /server_info (no waiting).
 * With `box` (the refreshes), /server_info is asked on the box with the key
 * the box keeps (providers/server-info-on-box.ts): no API key needed here,
 * and the read-only key's gate allows it. Without, over HTTP with the key.
 * `shared` (the refreshes: the run's looks): a look in flight for the same
 * server on the same box is shared; a rollout always looks afresh.
 */
export async function verifyServing(server: ServedServer, box?: RemoteRunner, opts: { shared?: ServerLooks } = {}): Promise<Serving> {
    const timeoutMs = server.readiness.probeTimeoutSeconds * 1000;
    const look = (): Promise<Look> => (box ? lookOnBox(server, box, timeoutMs) : lookOverHttp(server, timeoutMs));
    const { healthy, body } = await (box && opts.shared ? opts.shared.share(`${box.describe()}#${server.unitName}`, look) : look());
    if (body === undefined) return { healthy, liveArgs: null, speculativeActive: null, acceptLength: null };
    const liveArgs = normalizeServerInfo(body);
    const speculative = server.speculativeAlgorithm ? checkSpeculativeActive(body, server.speculativeAlgorithm) : undefined;
    return { healthy, liveArgs, speculativeActive: speculative ? speculative.ok : null, acceptLength: speculative?.ok ? speculative.acceptLength : null };
}

/** /health and /server_info at once; `serverInfo` reads the body of /server_info, undefined when it has none. */
async function lookAt(server: ServedServer, timeoutMs: number, serverInfo: () => Promise<unknown>): Promise<Look> {
    const [health, body] = await Promise.all([httpGetJson(endpointUrl(server.endpoint, "/health"), { timeoutMs }), serverInfo()]);
    return { healthy: "status" in health && health.status === 200, body };
}

function lookOnBox(server: ServedServer, box: RemoteRunner, timeoutMs: number): Promise<Look> {
    return lookAt(server, timeoutMs, () =>
        readServerInfoOnBox(box, server.unitName, timeoutMs).then(
            (r) => ("status" in r && r.status === 200 ? r.body : undefined),
            (e: unknown) => {
                // A stopped container serves nothing: not ready, no live args (the container's `up` starts it).
                if (containerNotRunning(e)) return undefined;
                throw e;
            },
        ),
    );
}

function lookOverHttp(server: ServedServer, timeoutMs: number): Promise<Look> {
    return lookAt(server, timeoutMs, () =>
        getServerInfo(server.endpoint, { timeoutMs, bearer: server.apiKey }).then((r) => ("body" in r ? r.body : undefined)),
    );
}
