import sys
d=sys.argv[1]; rate=float(open(d+"/rate").read().split()[0])*10
a={};b={}
for f,dd in (("ctx0",a),("ctx1",b)):
    for l in open(d+"/"+f):
        p=l.split(); dd[(p[0],p[1])]=(p[2],int(p[3]),int(p[4]),int(p[5]))
sw=0;cpu=0;fl=0
for k in b:
    if k in a:
        dv=b[k][1]-a[k][1]; dn=b[k][2]-a[k][2]; dc=b[k][3]-a[k][3]
        sw+=dv+dn; cpu+=dc
        if k[0]!=k[1] and dv> rate*0.05: fl+=dv
print(d, "appends/s %.0f  switches/append %.2f  flusher-switches/append %.2f  cpu us/append %.1f" % (rate/10, sw/rate, fl/rate, cpu*1e4/rate))
