/* polling ring: per iteration each rank posts MPI_Irecv from its left neighbour (tag 7) early, sends to its right neighbour, then computes
   in NC chunks of W/NC, calling MPI_Test between chunks until the message is in (then the remaining chunks run without tests); after the
   loop it MPI_Waits if still not in. Every 5th iteration the rank also sends a small tag-9 note to its right neighbour *before* the main
   message, and the receiver looks for it with MPI_Iprobe between chunks (MPI_Recv once the probe succeeds; a blocking MPI_Recv at the end
   of the iteration if never seen). args: iters W NC */
#include "common.h"
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int nc=0; int r,n; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&n);
  int iters=argc>1?atoi(argv[1]):100; long W=argc>2?atol(argv[2]):400000; int NC=argc>3?atoi(argv[3]):8;
  int L=(r+n-1)%n, R=(r+1)%n; double sb[128], rb[128], note=0, nb;
  MPI_Barrier(MPI_COMM_WORLD); ue_coll(nc++);
  double t0=MPI_Wtime();
  for(int it=0;it<iters;it++){
    MPI_Request rq; int got=0, want_note=(it%5==4), got_note=0;
    MPI_Irecv(rb,128,MPI_DOUBLE,L,7,MPI_COMM_WORLD,&rq);
    if(want_note){ note=it; ue_send(R,9); MPI_Send(&note,1,MPI_DOUBLE,R,9,MPI_COMM_WORLD); }
    for(int i=0;i<128;i++) sb[i]=it+r;
    ue_send(R,7); MPI_Send(sb,128,MPI_DOUBLE,R,7,MPI_COMM_WORLD);
    /* uneven work: rank r does (1 + r%3)/2 of W */
    long w=W*(1+r%3)/2/NC;
    for(int c=0;c<NC;c++){
      work(w);
      if(!got){ MPI_Test(&rq,&got,MPI_STATUS_IGNORE); if(got) ue_recv(L,7); }
      if(want_note && !got_note){ int f=0; MPI_Status st; MPI_Iprobe(L,9,MPI_COMM_WORLD,&f,&st);
        if(f){ MPI_Recv(&nb,1,MPI_DOUBLE,L,9,MPI_COMM_WORLD,MPI_STATUS_IGNORE); ue_recv(L,9); got_note=1; } }
    }
    if(!got){ MPI_Wait(&rq,MPI_STATUS_IGNORE); ue_recv(L,7); }
    if(want_note && !got_note){ MPI_Recv(&nb,1,MPI_DOUBLE,L,9,MPI_COMM_WORLD,MPI_STATUS_IGNORE); ue_recv(L,9); }
  }
  MPI_Barrier(MPI_COMM_WORLD); ue_coll(nc++);
  double t1=MPI_Wtime();
  if(r==0) printf("polling ranks %d iters %d time %.4f s\n",n,iters,t1-t0);
  MPI_Finalize(); return 0;
}
