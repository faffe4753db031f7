import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    if f.endswith("e2e.json"): continue
    try: r = json.load(open(f))
    except Exception: continue
    if "ranks" not in r: continue
    t = r.get("totals", {})
    cells = []
    for k in r["ranks"]:
        ph = k.get("phases", {})
        cells.append(f"r{k['rank']}{'' if k['active'] else '(idle)'} start {k.get('startup_seconds', -1):.3f} setup {ph.get('setup', 0):.3f} read {ph.get('read', 0):.2f} comp {ph.get('compute', 0):.2f} write {ph.get('write', 0):.2f}")
    print(os.path.basename(f), "wall", t.get("wall_seconds", t.get("seconds")), "|", " ; ".join(cells))
