"""Writes a copy of a system JSON with its devices renamed, as a catalog
system names them (gpu0 rather than this machine's vulkan0).

    rename_devices.py IN.json OUT.json OLD=NEW..."""
import json
import sys


def main(source, target, *renames):
    system = json.load(open(source))
    names = dict(rename.split("=", 1) for rename in renames)
    for device in system["devices"]:
        device["id"] = names.get(device["id"], device["id"])
    for link in system["links"]:
        for end in ("from", "to"):
            device, memory = link[end].split(".", 1)
            link[end] = names.get(device, device) + "." + memory
    system["name"] += "-renamed"
    json.dump(system, open(target, "w"), indent=2)


if __name__ == "__main__":
    main(*sys.argv[1:])
