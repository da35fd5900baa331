import subprocess, json, os, re, sys, time, resource
A='/work/main/build/native/actmem'; V='/work/main/build/native/actmem-validate'
D='/tmp/hostile7/f'
results=[]
def wf(name, obj):
    p=os.path.join(D,name)
    with open(p,'w') as f:
        f.write(obj if isinstance(obj,str) else json.dumps(obj))
    return p
def walk(o, path=''):
    if isinstance(o,dict):
        for k,v in o.items(): yield from walk(v, path+'.'+k)
    elif isinstance(o,list):
        for i,v in enumerate(o): yield from walk(v, path+f'[{i}]')
    else: yield path,o
def run(name, args, stdin=None, expect=None, exe=A, note=''):
    cmd=['/usr/bin/time','-f','MAXRSS=%M',exe]+args
    t=time.time()
    try:
        p=subprocess.run(cmd,input=stdin,capture_output=True,text=True,timeout=10)
        rc=p.returncode; out=p.stdout; err=p.stderr
    except subprocess.TimeoutExpired as e:
        rc='TIMEOUT'; out=e.stdout or ''; err=e.stderr or ''
        if isinstance(out,bytes): out=out.decode(errors='replace')
        if isinstance(err,bytes): err=err.decode(errors='replace')
    wall=time.time()-t
    m=re.search(r'MAXRSS=(\d+)',err); rss=int(m.group(1)) if m else -1
    err=re.sub(r'\n?MAXRSS=\d+\n?$','',err)
    err=re.sub(r'Command (exited with non-zero status|terminated by signal) \d+\n?','',err)
    flags=[]
    if rc not in (0,2): flags.append(f'BADRC:{rc}')
    if wall>5: flags.append(f'SLOW:{wall:.1f}')
    if rss>2_000_000: flags.append(f'RSS:{rss}')
    if rc==2:
        lines=err.rstrip('\n').split('\n')
        if len(lines)!=1 or not re.match(r'^actmem: error: [^ :]+: .+',lines[0]): flags.append('BADERRFMT')
        if err.count('\n')!=1: flags.append('NEWLINES')
    if rc==0:
        try:
            j=json.loads(out) if '--json' in args or exe==V or args[:1]==['requests'] else None
        except Exception: j=None
        if j is not None:
            for pth,v in walk(j):
                if isinstance(v,(int,float)) and not isinstance(v,bool):
                    if v<0 or v!=v or v>1e21: flags.append(f'NUM:{pth}={v}'); 
                if isinstance(v,str) and v in('nan','inf','-inf','NaN'): flags.append(f'NUM:{pth}={v}')
        else:
            if re.search(r'(?<![\w.])-\d',out) : flags.append('NEGTEXT?')
            if re.search(r'\bnan\b|\binf\b',out,re.I): flags.append('NANTEXT?')
    if expect is not None and rc!=expect: flags.append(f'EXPECT{expect}')
    r=dict(name=name,args=args,rc=rc,err=err.strip()[:600],wall=round(wall,2),rss=rss,flags=flags,out=out[:3000],note=note)
    results.append(r)
    print(f"{name:40s} rc={rc} {wall:.2f}s rss={rss} {' '.join(flags[:4])} | {err.strip()[:200]}")
    return r
def save(fn):
    json.dump(results,open(fn,'w'),indent=1)
