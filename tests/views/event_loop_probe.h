// EventLoopProbe: how long the GUI thread went without returning to its event
// loop. A 10 ms timer ticks on the GUI thread; each slice between two ticks is
// measured twice:
//   - cpuMs: the GUI thread's own CPU time in the slice (work done on it). It
//     does not grow while the scheduler runs other processes, so a loaded CI
//     machine cannot turn a responsive GUI into a failure;
//   - wallMs: the slice's wall-clock length (counts preemption and waits too:
//     a GUI thread blocked on a join or a read shows as a slice of seconds).
// Contract: construct, start(), run the work and the event loop, stop(), read
// worstCpuMs()/worstWallMs(). Only for the thread that owns the event loop.
#pragma once

#include <ctime>

#include <QElapsedTimer>
#include <QTimer>
#include <algorithm>

class EventLoopProbe {
 public:
  EventLoopProbe() {
    ticker_.setTimerType(Qt::PreciseTimer);
    ticker_.setInterval(10);
    QObject::connect(&ticker_, &QTimer::timeout, &ticker_, [this] { tick(); });
  }

  void start() {
    wall_.start();
    lastWallMs_ = 0;
    lastCpuMs_ = threadCpuMs();
    ticker_.start();
  }
  void stop() {
    tick();
    ticker_.stop();
  }
  qint64 worstCpuMs() const { return worstCpuMs_; }
  qint64 worstWallMs() const { return worstWallMs_; }

 private:
  static qint64 threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<qint64>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
  }
  void tick() {
    const qint64 wall = wall_.elapsed(), cpu = threadCpuMs();
    worstWallMs_ = std::max(worstWallMs_, wall - lastWallMs_);
    worstCpuMs_ = std::max(worstCpuMs_, cpu - lastCpuMs_);
    lastWallMs_ = wall;
    lastCpuMs_ = cpu;
  }

  QTimer ticker_;
  QElapsedTimer wall_;
  qint64 lastWallMs_ = 0, lastCpuMs_ = 0;
  qint64 worstWallMs_ = 0, worstCpuMs_ = 0;
};
