/**
 * One owner per server: the unit on the box records the Pulumi project and
 * stack that manage it (`# sglang-serve owner: <project>/<stack>`, see
 * core/unit/systemd-unit.ts), and a stack changes or deletes only a unit that is
 * its own, that records no owner (written by hand or before owners were
 * recorded), or that it was told to take over with `service.takeOverFrom`.
 *
 * Why: the field's two stacks, ct129 (straight into the container) and
 * kpro5 (through the Proxmox host), manage the same sglang-qwen.service;
 * without this, `pulumi destroy --stack ct129` (retiring the old path)
 * stopped and deleted the server kpro5 runs.
 */
import type { UnitOwner } from "./systemd-unit";

/** `<project>/<stack>`, as the unit's owner line and the messages write it. */
export function formatOwner(owner: UnitOwner): string {
    return `${owner.project}/${owner.stack}`;
}

export function parseOwner(text: string): UnitOwner | undefined {
    const m = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(text);
    return m ? { project: m[1], stack: m[2] } : undefined;
}

function sameOwner(a: UnitOwner, b: UnitOwner): boolean {
    return a.project === b.project && a.stack === b.stack;
}

/** Whether `takeOverFrom` (`<stack>`, same project, or `<project>/<stack>`) names `owner`. */
export function namesOwner(takeOverFrom: string, owner: UnitOwner, self: UnitOwner): boolean {
    const named = takeOverFrom.includes("/") ? parseOwner(takeOverFrom) : { project: self.project, stack: takeOverFrom };
    return named !== undefined && sameOwner(named, owner);
}

/** How `takeOverFrom` must name `owner` for `self`: the stack alone within one project. */
function takeOverValue(owner: UnitOwner, self: UnitOwner): string {
    return owner.project === self.project ? owner.stack : formatOwner(owner);
}

export type WriteDecision =
    | { kind: "ours" }
    /** No owner recorded: a hand-written unit, or one written before owners were recorded. */
    | { kind: "unowned" }
    | { kind: "take-over"; from: UnitOwner }
    | { kind: "refuse"; owner: UnitOwner; message: string };

/**
 * May `self` write (change, restart) the unit whose owner on the box is
 * `live`? `unit` and `where` only shape the message.
 */
export function decideWrite(args: { live: UnitOwner | undefined; self: UnitOwner; takeOverFrom?: string; unit: string; where: string }): WriteDecision {
    const { live, self, takeOverFrom, unit, where } = args;
    if (!live) return { kind: "unowned" };
    if (sameOwner(live, self)) return { kind: "ours" };
    if (takeOverFrom !== undefined && namesOwner(takeOverFrom, live, self)) return { kind: "take-over", from: live };
    const named = takeOverFrom === undefined ? "" : ` (sglang-serve:service.takeOverFrom is ${JSON.stringify(takeOverFrom)}, which is not its owner)`;
    return {
        kind: "refuse",
        owner: live,
        message:
            `${unit} on ${where} belongs to stack ${live.stack} of project ${live.project} (its unit file says ` +
            `"# sglang-serve owner: ${formatOwner(live)}"); stack ${formatOwner(self)} does not change or delete it${named}. ` +
            `To move the server to this stack, set sglang-serve:service.takeOverFrom: ${takeOverValue(live, self)} and run up again; ` +
            `${live.stack} then leaves it alone (its destroy no longer stops it).`,
    };
}

export type DeleteDecision = { kind: "delete" } | { kind: "leave"; owner: UnitOwner; message: string };

/**
 * May `self` stop and delete the unit (destroy, or a replace)? Only when it
 * is its own or records no owner: destroying one stack never stops a server
 * another stack owns. Leaving it is not an error, so the other stack's
 * destroy (retiring it) still completes. `self` is undefined for a state
 * written before owners were recorded: that stack never wrote an owner line,
 * so any owner the unit records is another stack that took it over since.
 */
export function decideDelete(args: { live: UnitOwner | undefined; self: UnitOwner | undefined; unit: string; where: string }): DeleteDecision {
    const { live, self, unit, where } = args;
    if (!live || (self !== undefined && sameOwner(live, self))) return { kind: "delete" };
    return {
        kind: "leave",
        owner: live,
        message:
            `[${unit}] not stopped or deleted: on ${where} it belongs to stack ${live.stack} of project ${live.project} ` +
            `now (# sglang-serve owner: ${formatOwner(live)}); only this stack's record of it is removed`,
    };
}
