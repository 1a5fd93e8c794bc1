/**
 * The fleet lab's GPUs: two of them, large enough for every server of the
 * fleet phases at TP 2 side by side (the simulator reserves
 * --mem-fraction-static of each GPU per server; nvidia-smi shows the sum).
 * Each server's static pool, 0.02 x 2 TiB = 41 GiB per GPU, holds its
 * 24.2 GiB of weights per GPU plus the KV cache; 45 servers fill 0.9 of the
 * GPUs (the default phases place 1 + 4 + 16 + 4 = 25).
 */
export const FLEET_GPU = { name: "NVIDIA Bench-Fleet 2TB", memoryMiB: 2 * 1024 * 1024 };
export const FLEET_MEM_FRACTION = 0.02;
export const FLEET_MAX_SERVERS = Math.floor(0.9 / FLEET_MEM_FRACTION);
export const FLEET_BASE_PORT = 30000;

export interface FleetMember {
    name: string;
    port: number;
}

/**
 * Who runs which servers. One owner per unit (core/ownership.ts): a server
 * adopted by one stack is refused to every other, so each fleet program and
 * each one-service stack gets servers of its own, all on the one fleet box:
 * the program of N has `n<N>-0` .. `n<N>-<N-1>`, the i-th one-service stack
 * `s<i>`; ports 30000 upwards in that order.
 */
export interface FleetPlan {
    /** The fleet program's members, by N. */
    programs: Map<number, FleetMember[]>;
    /** The one-service stacks' servers, one each. */
    stacks: FleetMember[];
    /** Every server the bench places on the box. */
    all: FleetMember[];
}

export function planFleet(programSizes: number[], stackCount: number): FleetPlan {
    for (const n of programSizes) {
        if (!Number.isInteger(n) || n < 1) throw new Error(`--fleet sizes must be positive integers, got ${n}`);
    }
    if (new Set(programSizes).size !== programSizes.length) throw new Error(`--fleet lists a size twice: ${programSizes.join(",")}`);
    const all: FleetMember[] = [];
    const member = (name: string): FleetMember => {
        const m = { name, port: FLEET_BASE_PORT + all.length };
        all.push(m);
        return m;
    };
    const programs = new Map(programSizes.map((n) => [n, Array.from({ length: n }, (_, i) => member(`n${n}-${i}`))]));
    const stacks = Array.from({ length: stackCount }, (_, i) => member(`s${i}`));
    if (all.length > FLEET_MAX_SERVERS) {
        throw new Error(
            `the fleet phases need ${all.length} servers (--fleet ${programSizes.join(",")} and ${stackCount} one-service stacks) ` +
                `but the fleet lab's GPUs hold ${FLEET_MAX_SERVERS}: ask for smaller --fleet or --stacks sizes`,
        );
    }
    return { programs, stacks, all };
}
