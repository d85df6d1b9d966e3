# Folds `perf script` output into call stacks and prints, for the
# stacks through a function, the share of all samples of each of its
# immediate callees (how loop/profiles.txt splits sysmon and findRunnable).
#   perf script -i perf.data | python3 fold.py child runtime.sysmon
import sys, collections
# perf script output -> stacks (leaf first)
stacks=[]; cur=[]
for line in sys.stdin:
    line=line.rstrip('\n')
    if not line.strip():
        if cur: stacks.append(cur); cur=[]
        continue
    if line.startswith(('\t',' ')):
        parts=line.strip().split(None,1)
        if len(parts)==2:
            sym=parts[1].split('+')[0].split(' (')[0]
            cur.append(sym)
if cur: stacks.append(cur)
N=len(stacks)
mode=sys.argv[1]; target=sys.argv[2] if len(sys.argv)>2 else None
c=collections.Counter()
for s in stacks:
    if mode=='child':  # immediate callee of target
        if target in s:
            i=s.index(target)
            c[s[i-1] if i>0 else '(self)']+=1
    elif mode=='top':  # outermost frames
        c[' <- '.join(reversed(s[-3:]))]+=1
tot=sum(c.values())
print("total samples",N,"matched",tot, "%.1f%%"%(100*tot/N))
for k,v in c.most_common(25): print("%5.1f%% %s"%(100*v/N,k))
