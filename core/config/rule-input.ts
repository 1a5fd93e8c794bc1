/**
 * What the config rules see: the stack's boxes and servers that parsed (each
 * under the key it is declared at), the gateway and readiness sections, and
 * the box a server runs on.
 */
import { ContainerConfig, GatewayConfig, HostConfig, ReadinessConfig, ServiceConfig } from "./schema";
import { Findings } from "./findings";
import type { ResolvedRevision } from "../weights/revision-pins";

/** The stack's servers as the rules see them: each that parsed, under the key it is declared at; which sections were given at all. */
export interface ServersInput {
    given: { service: boolean; servers: boolean };
    list: Array<{ key: string; service: ServiceConfig }>;
}

/** One box as the rules see it: its host and container, and the keys they are declared at (`host`, or `boxes[1].host`). */
export interface BoxInput {
    /** `boxes[i]`; undefined for the host and container sections. */
    key?: string;
    host?: HostConfig;
    container?: ContainerConfig;
    containerGiven: boolean;
}

/** The stack's boxes: each that parsed; which sections were given at all. */
export interface BoxesInput {
    given: { host: boolean; boxes: boolean };
    list: BoxInput[];
}

/** What the rules see: each section that parsed, and which keys were given at all. */
export interface RuleInput {
    boxes: BoxesInput;
    servers: ServersInput;
    /** The gateway section as parsed (its box and workers as declared, maybe left out). */
    gateway?: Omit<GatewayConfig, "box" | "workers"> & Partial<Pick<GatewayConfig, "box" | "workers">>;
    readiness?: ReadinessConfig;
    /** SSH_AUTH_SOCK is set where the program runs; undefined when not known (render). */
    sshAgentAvailable?: boolean;
    /** What the Hub said the sources' unpinned revisions name, by revisionQueryKey (core/weights/revision-pins.ts); absent: not asked. */
    resolvedRevisions?: ReadonlyMap<string, ResolvedRevision>;
}

/** The box a server runs on: the one box, or the one its `box` names. Undefined (and an issue) when it names none. */
export function boxOfServer(boxes: BoxesInput, key: string, service: ServiceConfig, f: Findings): BoxInput | undefined {
    const names = boxes.list.map((b) => b.host?.name).filter((n): n is string => n !== undefined);
    if (service.box === undefined) {
        if (boxes.list.length === 1) return boxes.list[0];
        if (boxes.list.length > 1) {
            f.issue(`${key}.box`, undefined, `${key}.box is not set, and the stack has ${boxes.list.length} boxes: set it to one of ${names.join(", ")}.`);
        }
        return undefined;
    }
    const box = boxes.list.find((b) => b.host?.name === service.box);
    if (!box && names.length === boxes.list.length) {
        f.issue(
            `${key}.box`,
            service.box,
            `${key}.box is "${service.box}", which names no box of the stack: use one of ${names.join(", ")} (the boxes' host.name).`,
        );
    }
    return box;
}
