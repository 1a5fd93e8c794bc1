// The box's side of the mirror's fault knobs: a disk too small for the
// model. A command runs with `dir` on a tmpfs of `bytes` bytes, mounted in a
// private mount namespace of its own (needs root; nothing is left mounted
// when the command ends), so statvfs (huggingface_hub's free-space check)
// and writes (ENOSPC) both see the small disk. In the container the same
// idea would be a size-limited mount at the models folder (lab/README.md).

/** argv that runs `argv` with a `bytes`-byte tmpfs mounted on `dir` (an existing directory). */
export function smallDiskArgv(dir: string, bytes: number, argv: readonly string[]): string[] {
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount -t tmpfs -o size="$1" sglang-lab-small-disk "$2" && shift 2 && exec "$@"',
        "sh",
        String(bytes),
        dir,
        ...argv,
    ];
}
