/**
 * The SglangGateway resource's props and outputs, declared once: the
 * component (components/sglang-gateway.ts) passes exactly these fields (each
 * an Input), the provider (providers/sglang-gateway.ts) reads them.
 */
import type { Connection } from "../core/connection";
import type { GatewayWorker } from "../core/gateway/gateway";
import type { VenvPlan } from "../core/venv/venv-layout";

export interface GatewayProps {
    providerVersion: string;
    /** The gateway's box. */
    connection: Connection;
    unitName: string;
    unitText: string;
    /** smg's venv, staged when missing (core/venv/venv-layout.ts gatewayVenvPlan). */
    venv: VenvPlan;
    /** Where the stack reaches its admin API, from its box (core/gateway/gateway.ts gatewayAdminUrl). */
    adminUrl: string;
    /** Where clients reach it. */
    endpoint: string;
    /** The servers behind it: each registered as a worker by its URL. */
    workers: Array<{ name: string; url: string }>;
    /** The servers require the API key: the gateway's data plane does too (the same key, SGLANG_SERVE_API_KEY). */
    requireApiKey: boolean;
    /** `<project>/<stack>`, recorded in the unit (core/unit/ownership.ts). */
    owner: string;
}

export interface GatewayOutputs extends GatewayProps {
    /** systemd's ActiveState at the last read. */
    activeState: string;
    /** The workers `GET /workers` listed at the last read; absent where the read could not ask (the read-only key). */
    registered?: GatewayWorker[];
}
