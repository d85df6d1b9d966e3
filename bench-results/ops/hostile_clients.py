"""Hostile clients against a running lsmgo serve (or redis-server).

Opens N connections that each start a SET whose value is MB megabytes
(plus a little), sends MB megabytes of it one megabyte per round across all
connections, and never finishes; then times PING, SET and GET from
redis-cli, closes the connections and reports the server's RSS (read from
/proc/PID/status) at idle, at its peak and 3 s after the disconnects.

Usage (loopback only):
  d=$(mktemp -d); lsmgo serve --dir $d --addr 127.0.0.1:9311 --http "" --appendfsync no & pid=$!
  sleep 1; python3 bench-results/ops/hostile_clients.py 9311 $pid 200 10; kill $pid
"""
import socket, sys, time, os, subprocess
port=int(sys.argv[1]); pid=int(sys.argv[2]); n=int(sys.argv[3]); mb=int(sys.argv[4])
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])//1024
print("idle RSS MB", rss())
socks=[]
hdr=b"*3\r\n$3\r\nSET\r\n$7\r\nhostile\r\n$%d\r\n" % (mb*1024*1024+1000)
chunk=b"h"*(1<<20)
for i in range(n):
    s=socket.create_connection(("127.0.0.1",port)); s.setblocking(True); s.settimeout(5)
    s.sendall(hdr); socks.append(s)
closed=0; peak=0
for r in range(mb):
    for s in socks:
        if s is None: continue
        try: s.sendall(chunk)
        except Exception: closed+=1
    peak=max(peak,rss())
time.sleep(1); peak=max(peak,rss())
t=time.time(); out=subprocess.run(["redis-cli","-p",str(port),"PING"],capture_output=True,text=True).stdout.strip()
subprocess.run(["redis-cli","-p",str(port),"SET","good","1"],capture_output=True)
g=subprocess.run(["redis-cli","-p",str(port),"GET","good"],capture_output=True,text=True).stdout.strip()
el=time.time()-t
print("peak RSS MB", peak, "send errors", closed, "PING+SET+GET", round(el,3), "s", out, g)
for s in socks: s.close()
time.sleep(3)
print("RSS 3s after disconnect MB", rss())
info=subprocess.run(["redis-cli","-p",str(port),"INFO","stats"],capture_output=True,text=True).stdout
print([l for l in info.splitlines() if "evicted" in l])
