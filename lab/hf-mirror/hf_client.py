"""The real huggingface_hub (lab/hf-mirror/install.sh's client venv) against
HF_ENDPOINT, one call per run, its result as one JSON line on stdout; an
exception is its traceback on stderr and exit 1. Only huggingface_hub's
public API:

  hf_client.py download REPO REVISION CACHE_DIR   snapshot_download -> {"path"}
  hf_client.py file REPO REVISION FILE CACHE_DIR  hf_hub_download -> {"path"}
  hf_client.py info REPO REVISION                 model_info(files_metadata=True),
                                                  get_paths_info, list_repo_tree
  hf_client.py verify REPO REVISION CACHE_DIR     verify_repo_checksums

REVISION "-" passes None (huggingface_hub's default).
"""

import json
import sys

from huggingface_hub import HfApi, hf_hub_download, snapshot_download


def lfs(info):
    return None if info is None else {"sha256": info.sha256, "size": info.size, "pointerSize": info.pointer_size}


def repo_file(f):
    return {"path": f.path, "size": f.size, "blobId": f.blob_id, "lfs": lfs(f.lfs)}


def main(argv):
    command, repo, revision = argv[0], argv[1], None if argv[2] == "-" else argv[2]
    api = HfApi()
    if command == "download":
        return {"path": snapshot_download(repo, revision=revision, cache_dir=argv[3])}
    if command == "file":
        return {"path": hf_hub_download(repo, argv[3], revision=revision, cache_dir=argv[4])}
    if command == "info":
        info = api.model_info(repo, revision=revision, files_metadata=True)
        names = [s.rfilename for s in info.siblings]
        return {
            "sha": info.sha,
            "siblings": [{"rfilename": s.rfilename, "size": s.size, "blobId": s.blob_id, "lfs": lfs(s.lfs)} for s in info.siblings],
            "pathsInfo": [repo_file(f) for f in api.get_paths_info(repo, names, revision=info.sha)],
            "tree": [repo_file(f) for f in api.list_repo_tree(repo, recursive=True, revision=info.sha)],
        }
    if command == "verify":
        v = api.verify_repo_checksums(repo, revision=revision, cache_dir=argv[3])
        return {"revision": v.revision, "checked": v.checked_count, "mismatches": v.mismatches, "missing": v.missing_paths, "extra": v.extra_paths}
    raise SystemExit(f"hf_client.py: unknown command {command!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
