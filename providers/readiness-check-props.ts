/**
 * The ReadinessCheck resource's props and outputs, declared once: the
 * component (components/readiness-check.ts) passes exactly these fields (each
 * an Input), the provider (providers/readiness-check.ts) reads them.
 */
import type { Connection } from "../core/connection";
import type { ReadinessConfig } from "../core/config/schema";
import type { ServingVerified } from "./sglang-server/props";

export interface ReadinessProps {
    providerVersion: string;
    connection: Connection;
    unitName: string;
    endpoint: string;
    /** The service's rollout revision: a new revision re-runs the check. */
    revision: string;
    /** The service's servingVerified output: a rollout of this run that already verified `revision` serving. */
    servingVerified?: ServingVerified;
    /** The server requires the API key; its value comes from the deploy run (providers/deploy-secrets.ts deployApiKey), never an input. */
    requireApiKey?: boolean;
    /** Held by states written before requireApiKey; dropped from the outputs. */
    apiKey?: string;
    servedModelName: string;
    speculativeAlgorithm?: string;
    readiness: ReadinessConfig;
}

export interface ReadinessOutputs extends ReadinessProps {
    /** GET /health answered 200 at the last check. */
    ready: boolean;
    /** /server_info normalized to the fields the stack owns (SGLang's defaults filled in). */
    liveServerArgs: Record<string, unknown> | null;
    /** With speculative decoding: /server_info shows it active. Null without speculation. */
    speculativeActive: boolean | null;
}
