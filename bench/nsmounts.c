// What a sandboxed command pays, unprivileged, for the devpts and /proc of
// its sandbox's own (sandbox/internal/spawn/devpts_linux.c, procfs_linux.c): 400 clones
// of a user + mount + PID namespace that map themselves and exit, plain,
// + the devpts clone, + the /proc (procfs, skeleton, four bound files).
//
//   cc -O1 -o /tmp/nsmounts bench/nsmounts.c && setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/nsmounts

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <linux/mount.h>
static int wr(const char*p,const char*d){int fd=open(p,O_WRONLY);if(fd<0)return -1;int n=write(fd,d,strlen(d));close(fd);return n<0?-1:0;}
static char um[64],gm[64];
static void maps(void){wr("/proc/self/setgroups","deny");wr("/proc/self/uid_map",um);wr("/proc/self/gid_map",gm);}
static char stk[1<<16] __attribute__((aligned(16)));
int devfd=-1,skel=-1;
static int fsm(const char*t,const char*o[][2],int n,int at){int fs=syscall(SYS_fsopen,t,FSOPEN_CLOEXEC);if(fs<0)return -1;for(int i=0;i<n;i++)if(syscall(SYS_fsconfig,fs,FSCONFIG_SET_STRING,o[i][0],o[i][1],0)<0){perror(o[i][0]);return -1;}if(syscall(SYS_fsconfig,fs,FSCONFIG_CMD_CREATE,0,0,0)<0)return -1;int m=syscall(SYS_fsmount,fs,FSMOUNT_CLOEXEC,at);close(fs);return m;}
static const char*files[]={"cpuinfo","meminfo","stat","filesystems"};
static int mk(void*a){maps();const char*d[][2]={{"ptmxmode","0666"}};devfd=fsm("devpts",d,1,0);
 const char*s[][2]={{"mode","0555"}};skel=fsm("tmpfs",s,1,0);mkdirat(skel,"pid",0555);symlinkat("pid/self",skel,"self");
 for(int i=0;i<4;i++)close(openat(skel,files[i],O_CREAT|O_WRONLY,0444));
 return 0;}
int extra;
static int ch(void*a){maps(); if(mount(NULL,"/",NULL,MS_REC|MS_PRIVATE,NULL)<0)_exit(1);
 if(extra){ int t=syscall(SYS_open_tree,devfd,"",OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC|AT_EMPTY_PATH); if(syscall(SYS_move_mount,t,"",AT_FDCWD,"/dev/pts",MOVE_MOUNT_F_EMPTY_PATH)<0)_exit(2);
 } if(extra==2){
  const char*p[][2]={{"subset","pid"},{"hidepid","ptraceable"}}; int pr=fsm("proc",p,2,MOUNT_ATTR_RDONLY); if(pr<0)_exit(3);
  int b[4]; char path[64]; for(int i=0;i<4;i++){sprintf(path,"/proc/%s",files[i]); b[i]=syscall(SYS_open_tree,AT_FDCWD,path,OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC);}
  int s=syscall(SYS_open_tree,skel,"",OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC|AT_EMPTY_PATH); if(syscall(SYS_move_mount,s,"",AT_FDCWD,"/proc",MOVE_MOUNT_F_EMPTY_PATH)<0)_exit(4);
  if(syscall(SYS_move_mount,pr,"",AT_FDCWD,"/proc/pid",MOVE_MOUNT_F_EMPTY_PATH)<0)_exit(5);
  for(int i=0;i<4;i++){sprintf(path,"/proc/%s",files[i]); if(syscall(SYS_move_mount,b[i],"",AT_FDCWD,path,MOVE_MOUNT_F_EMPTY_PATH)<0)_exit(6);}
 }
 _exit(0);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(){sprintf(um,"%d %d 1",getuid(),getuid());sprintf(gm,"%d %d 1",getgid(),getgid());
 int pid=clone(mk,stk+sizeof stk,CLONE_VM|CLONE_VFORK|CLONE_FILES|CLONE_NEWUSER|CLONE_NEWNS|SIGCHLD,0);waitpid(pid,0,0);
 if(devfd<0||skel<0){printf("mk failed\n");return 1;}
 static double t[3][400]; 
 for(int i=0;i<400;i++)for(extra=0;extra<3;extra++){double s=now();int p=clone(ch,stk+sizeof stk,CLONE_VM|CLONE_VFORK|CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|SIGCHLD,0);int st;waitpid(p,&st,0);t[extra][i]=now()-s;if(WEXITSTATUS(st)){printf("child fail %d\n",WEXITSTATUS(st));return 1;}}
 const char*nm[]={"plain ns","+devpts","+devpts+proc"};for(int e=0;e<3;e++){qsort(t[e],400,sizeof(double),cmp);printf("%s: median %.0f us p90 %.0f us\n",nm[e],t[e][200],t[e][360]);}
 return 0;}
