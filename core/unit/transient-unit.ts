// A transient unit (`systemd-run --unit=... --collect`, as the venv and weights
// stagings run their programs) by the state `systemctl is-active` names.

/**
 * Whether the unit's program runs or is starting (`active`, `activating`).
 * Anything else is an ended unit: `inactive` (also for one systemd has
 * collected), `failed`, `deactivating`, or nothing.
 */
export function transientUnitRuns(activeState: string): boolean {
    return activeState === "active" || activeState === "activating";
}
