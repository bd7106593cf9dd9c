/* A reproducer for Open MPI 4.1's TCP BTL, with no dptrain code: ranks of "nodes" that all live on one
 * loaded machine open their first connections to each other at the same moment, from both sides.
 *
 * Every rank posts a receive from every other rank and sends one small message to each (tag 1), then
 * a larger one (tag 2: ob1's rendezvous path), then meets the others in a barrier; it repeats that
 * ROUNDS times. Over btl self,tcp on loopback each pair connects lazily at its first message, and both
 * sides of a pair usually try at once: the crossing connection attempts that 4.1's endpoint code can
 * misframe (docs/troubleshooting.md, "A rank crashed in mca_btl_tcp.so"). A misframed stream gives a
 * garbage active-message tag, and the receive handler calls a null callback: SIGSEGV at pc 0.
 *
 * With "heartbeats" as the second argument it also does what dptrain's start does beside that
 * (distributed/stall_watch.cpp): MPI_THREAD_SERIALIZED, and a second thread that every 100 ms, under
 * one mutex with the main thread, sends a heartbeat on a communicator of its own (the other ranks to
 * rank 0, rank 0 to all) and receives those that arrived; the main thread then polls its requests
 * under that mutex instead of blocking in MPI.
 *
 * Build and run through tools/ompi-tcp-repro/run.sh, which counts crashes over many starts.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kSmall = 64, kLarge = 256 * 1024, kHeartbeatTag = 7, kMaxSends = 256 };

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int heartbeats = 0; /* the mode: a second thread and polled waits, as dptrain */
static volatile int stopping = 0;
static MPI_Comm beat_comm;

/* Waits for `n` requests: blocking, or polled under the mutex so that the heartbeat thread can run. */
static void wait_all(int n, MPI_Request* requests) {
  if (!heartbeats) {
    MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    return;
  }
  for (int done = 0; !done;) {
    pthread_mutex_lock(&mpi_lock);
    MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    pthread_mutex_unlock(&mpi_lock);
  }
}

static void* beat(void* unused) {
  (void)unused;
  int rank = 0, size = 1;
  MPI_Comm_rank(beat_comm, &rank);
  MPI_Comm_size(beat_comm, &size);
  static long long values[kMaxSends];
  MPI_Request sends[kMaxSends];
  int pending = 0;
  long long count = 0;
  while (!stopping) {
    pthread_mutex_lock(&mpi_lock);
    for (int arrived = 1; arrived;) {
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, beat_comm, &arrived, &status);
      if (arrived) {
        long long value = 0;
        MPI_Recv(&value, 1, MPI_LONG_LONG, status.MPI_SOURCE, kHeartbeatTag, beat_comm, MPI_STATUS_IGNORE);
      }
    }
    if (pending > 0) {
      int done = 0;
      MPI_Testall(pending, sends, &done, MPI_STATUSES_IGNORE);
      if (done) pending = 0;
    }
    for (int to = rank == 0 ? 1 : 0; to < (rank == 0 ? size : 1) && pending < kMaxSends; ++to) {
      values[pending] = ++count;
      MPI_Isend(&values[pending], 1, MPI_LONG_LONG, to, kHeartbeatTag, beat_comm, &sends[pending]);
      ++pending;
    }
    pthread_mutex_unlock(&mpi_lock);
    struct timespec period = {0, 100 * 1000 * 1000};
    nanosleep(&period, NULL);
  }
  pthread_mutex_lock(&mpi_lock);
  if (pending > 0) {
    /* The peers may be gone: cancel what they never took. */
    for (int i = 0; i < pending; ++i) MPI_Cancel(&sends[i]);
    MPI_Waitall(pending, sends, MPI_STATUSES_IGNORE);
  }
  pthread_mutex_unlock(&mpi_lock);
  return NULL;
}

static void exchange(int size, int rank, int tag, int bytes, char* send, char* recv) {
  MPI_Request* requests = malloc(sizeof(MPI_Request) * 2 * (size_t)size);
  int n = 0;
  if (heartbeats) pthread_mutex_lock(&mpi_lock);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    MPI_Irecv(recv + (size_t)peer * bytes, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &requests[n++]);
  }
  for (int step = 1; step < size; ++step) {
    /* Everyone sends to rank+1 first, then rank+2...: each pair's two first messages cross. */
    const int peer = (rank + step) % size;
    MPI_Isend(send, bytes, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &requests[n++]);
  }
  if (heartbeats) pthread_mutex_unlock(&mpi_lock);
  wait_all(n, requests);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (recv[(size_t)peer * bytes] != (char)('A' + peer % 26)) {
      fprintf(stderr, "rank %d: wrong bytes from rank %d (tag %d)\n", rank, peer, tag);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  free(requests);
}

int main(int argc, char** argv) {
  heartbeats = argc > 2 && strcmp(argv[2], "heartbeats") == 0;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, heartbeats ? MPI_THREAD_SERIALIZED : MPI_THREAD_SINGLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  char* send = malloc(kLarge);
  char* recv = malloc((size_t)kLarge * (size_t)size);
  memset(send, 'A' + rank % 26, kLarge);
  pthread_t beater;
  if (heartbeats) {
    MPI_Comm_dup(MPI_COMM_WORLD, &beat_comm);
    pthread_create(&beater, NULL, beat, NULL);
  }
  for (int round = 0; round < rounds; ++round) {
    exchange(size, rank, 1, kSmall, send, recv);
    exchange(size, rank, 2, kLarge, send, recv);
    if (heartbeats) {
      MPI_Request barrier;
      pthread_mutex_lock(&mpi_lock);
      MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
      pthread_mutex_unlock(&mpi_lock);
      wait_all(1, &barrier);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  if (heartbeats) {
    stopping = 1;
    pthread_join(beater, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&beat_comm);
  }
  if (rank == 0) printf("first_messages: %d ranks, %d rounds%s: ok\n", size, rounds, heartbeats ? ", heartbeats" : "");
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
