import sys,collections
# perfsum.py NAME [DIR]: per-command CPU and system calls in each window
# that syscalls.sh marked, from its perf stat -I counts.
name=sys.argv[1]; d=(sys.argv[2] if len(sys.argv)>2 else '/tmp/evloop/prof')+'/'
marks=[l.split() for l in open(d+name+'.marks')]
t0=float(marks[0][1]); w={}
for m in marks[1:]:
    w.setdefault(m[1],{})[m[2]]=(float(m[3])-t0,int(m[4]))
rows=[]
for l in open(d+name+'.perf'):
    if not l.strip() or l.startswith('#'): continue
    f=l.strip().split(',')
    try: rows.append((float(f[0]),float(f[1]) if f[1] not in('<not counted>','') else 0,f[3]))
    except: pass
for k,v in w.items():
    (s,c0),(e,c1)=v['start'],v['end']
    acc=collections.Counter()
    for t,val,ev in rows:
        if s+1<=t<=e: acc[ev]+=val
    # window used: intervals fully inside [s,e]; scale commands by fraction
    ts=[t for t,_,_ in rows if s+1<=t<=e]; 
    if not ts: continue
    span=(max(ts)-min(ts)+1); cmds=(c1-c0)*span/(e-s)
    print(f"{name} {k}: ~{cmds:.0f} cmds in {span:.0f}s; " + ", ".join(f"{ev.split(':')[-1].replace('sys_enter_','')} {val/cmds:.3f}" if ev!='task-clock' else f"cpu {val*1000/cmds:.1f}us" for ev,val in acc.items()))
