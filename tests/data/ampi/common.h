/* shared helpers: busy work and Projections user events marking sends/receives (ground truth for the checker)
   user event codes (Projections keeps 16 bits): 10000+peer*100+tag = receive from peer with tag completed (in the piece that calls this)
                     20000+peer*100+tag = about to send to peer with tag
                     30000+k            = k-th collective completed */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
void traceUserEvent(int);
static double sink;
static void work(long n){ double x=sink+1.0; for(long i=0;i<n;i++) x=x*1.0000001+1e-9; sink=x; }
static void ue_recv(int src,int tag){ traceUserEvent(10000+src*100+tag); }
static void ue_send(int dst,int tag){ traceUserEvent(20000+dst*100+tag); }
/* AMPI ranks share globals: the collective counter is a local of main (nc) */
static void ue_coll(int k){ traceUserEvent(30000+k); }
