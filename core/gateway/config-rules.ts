/** The config rules about the gateway: on a box of the stack, its own name and ports there, in front of servers of the stack that agree on the API key. */
import { isLoopback } from "../config/values";
import { pulumiKey } from "../config/namespace";
import type { ServiceConfig } from "../config/schema";
import { DEFAULT_LISTEN_HOST } from "../sglang/rules";
import { Findings } from "../config/findings";
import { BoxInput, BoxesInput, RuleInput, boxOfServer } from "../config/rule-input";

/** The gateway: on a box of the stack, its own name and ports there, in front of servers of the stack that agree on the API key. */
export function gatewayRule(
    boxes: BoxesInput,
    gateway: NonNullable<RuleInput["gateway"]>,
    placed: ReadonlyArray<{ key: string; service: ServiceConfig; box: BoxInput }>,
    f: Findings,
): void {
    const box = boxOfServer(boxes, "gateway", { box: gateway.box } as ServiceConfig, f);
    const named = placed.find((p) => p.service.name === gateway.name);
    if (named) {
        f.issue(
            "gateway.name",
            gateway.name,
            `gateway.name is "${gateway.name}", which ${named.key} has too: the gateway's unit is sglang-<name>.service, so give it another name.`,
        );
    }
    const ports: Array<[string, number]> = [
        ["gateway.port", gateway.port],
        ["gateway.prometheusPort", gateway.prometheusPort],
    ];
    if (gateway.port === gateway.prometheusPort)
        f.issue("gateway.prometheusPort", gateway.prometheusPort, "gateway.prometheusPort is gateway.port too: give smg's metrics a port of their own.");
    for (const [path, value] of ports) {
        const taken = placed.find((p) => p.box === box && p.service.port === value);
        if (taken) f.issue(path, value, `${path} is ${value}, which ${taken.key} listens on, on the same box: choose another port.`);
    }
    const workers = gateway.workers ?? placed.map((p) => p.service.name);
    const seen = new Set<string>();
    gateway.workers?.forEach((name, i) => {
        const path = `gateway.workers[${i}]`;
        if (seen.has(name)) f.issue(path, name, `${path} lists ${name} twice: remove the duplicate.`);
        seen.add(name);
        if (!placed.some((p) => p.service.name === name)) {
            f.issue(
                path,
                name,
                `${path} is "${name}", which is no server of the stack: use one of ${placed.map((p) => p.service.name).join(", ") || "(none)"}.`,
            );
        }
    });
    // The gateway hands the client's Authorization on to the server it picks: every server behind it must take the same key, or none.
    const behind = placed.filter((p) => workers.includes(p.service.name));
    const keyed = behind.filter((p) => p.service.requireApiKey);
    if (keyed.length > 0 && keyed.length < behind.length) {
        const open = behind.find((p) => !p.service.requireApiKey)!;
        f.issue(
            `${open.key}.requireApiKey`,
            false,
            `${open.key}.requireApiKey is false, but ${keyed[0]!.key} behind the same gateway requires the API key: the gateway passes each client's key on to the server it picks, so the servers behind it must all require the key (SGLANG_SERVE_API_KEY), or none.`,
        );
    }
    const listen = gateway.listenHost ?? DEFAULT_LISTEN_HOST;
    if (isLoopback(listen) && !isLoopback(gateway.endpointHost)) {
        f.issue(
            "gateway.listenHost",
            gateway.listenHost,
            `gateway.listenHost is ${gateway.listenHost ?? `unset (smg listens on ${DEFAULT_LISTEN_HOST} as the stack runs it)`}, so the gateway is unreachable at endpointHost ${gateway.endpointHost}: set listenHost: 0.0.0.0 or the box's address.`,
            ["gateway.endpointHost"],
        );
    }
    if (gateway.venv.adopt[gateway.smgVersion] === undefined && gateway.venv.root.replace(/\/+$/, "") === "") {
        f.issue("gateway.venv.root", gateway.venv.root, `${pulumiKey("gateway.venv.root")} must be a directory other than /: e.g. /opt/smg.`);
    }
}
