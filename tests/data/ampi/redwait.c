/* ring with a collective between posting and completing the receive: per iteration MPI_Irecv from the left (tag 5), MPI_Isend to the
   right, compute ~W*(1+r%3)/2, MPI_Allreduce, then MPI_Wait on the receive (the message is usually in by then, so the piece that
   consumes it was woken by the Allreduce's result, not by the message). args: iters W */
#include "common.h"
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int nc=0; int r,n; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&n);
  int iters=argc>1?atoi(argv[1]):100; long W=argc>2?atol(argv[2]):400000;
  int L=(r+n-1)%n, R=(r+1)%n; double sb[64], rb[64], acc=0;
  MPI_Barrier(MPI_COMM_WORLD); ue_coll(nc++);
  double t0=MPI_Wtime();
  for(int it=0;it<iters;it++){
    MPI_Request rq[2];
    MPI_Irecv(rb,64,MPI_DOUBLE,L,5,MPI_COMM_WORLD,&rq[0]);
    for(int i=0;i<64;i++) sb[i]=it+r+acc*1e-9;
    ue_send(R,5); MPI_Isend(sb,64,MPI_DOUBLE,R,5,MPI_COMM_WORLD,&rq[1]);
    work(W*(1+r%3)/2);
    double g; MPI_Allreduce(&acc,&g,1,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD); ue_coll(nc++);
    MPI_Wait(&rq[0],MPI_STATUS_IGNORE); ue_recv(L,5); acc=g*1e-6+rb[0];
    MPI_Wait(&rq[1],MPI_STATUS_IGNORE);
  }
  double t1=MPI_Wtime();
  if(r==0) printf("redwait ranks %d iters %d time %.4f s acc %g\n",n,iters,t1-t0,acc);
  MPI_Finalize(); return 0;
}
