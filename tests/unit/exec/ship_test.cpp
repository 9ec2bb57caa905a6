#include "mlw/exec/ship.hpp"
#include "mlw/exec/place.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mlw/kinds/kind.hpp"

#include <sys/stat.h>
#include <algorithm>
#include <cstdlib>

#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fakes.hpp"
#include "temp_dir.hpp"

#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// A project with two files, its snapshot taken, and a "target" store beside it that this
/// machine's /bin/sh plays (the same script runs over SSH).
struct ShipFixture {
  test::TempDir dir{"mlw-ship"};
  std::ostringstream err;
  Context ctx;
  RunPlan plan;
  fs::path store;

  ShipFixture() {
    ctx.err = &err;
    ctx.out = &err;
    const fs::path root = dir.path() / "proj";
    make_directories(root / "sub");
    atomic_write_file(root / "a.txt", "alpha\n");
    atomic_write_file(root / "sub" / "b.py", "print('b')\n");
    plan.project = {root, "proj"};
    plan.record.run_id = "proj_1";
    plan.manifest = build_snapshot(root, root / ".mlw" / "objects", root / ".mlw" / "hashes.tsv");
    store = dir.path() / "target" / ".mlw";
  }

  const ManifestEntry& entry(const std::string& path) const {
    for (const auto& e : plan.manifest.entries) {
      if (e.path == path) return e;
    }
    throw Error("no entry " + path);
  }

  void ship(const std::string& run) {
    LocalShell shell;
    ship_snapshot(ctx, shell, plan, store.string(), EnvironmentSpec{},
                  (store / "runs" / run).string());
  }
};

ino_t inode(const fs::path& path) {
  struct stat info {};
  ::stat(path.c_str(), &info);
  return info.st_ino;
}

}  // namespace

TEST(Ship, MakesTheRunFolderAsHardLinksIntoTheStore) {
  ShipFixture f;
  f.ship("r1");
  const fs::path run = f.store / "runs" / "r1";
  EXPECT_EQ(read_file(run / "snapshot" / "sub" / "b.py"), "print('b')\n");
  EXPECT_EQ(inode(run / "snapshot" / "a.txt"),
            inode(f.store / "objects" / f.entry("a.txt").sha256));
  EXPECT_TRUE(fs::is_directory(run / "snapshot" / "outputs"));
  EXPECT_TRUE(fs::exists(run / "driver_log.txt"));
  EXPECT_TRUE(fs::exists(run / "env" / "Dockerfile"));
  EXPECT_FALSE(fs::exists(f.store / "runs" / "r1.tmp"));
}

TEST(Ship, SendsOnlyWhatTheStoreLacks) {
  ShipFixture f;
  // The store already has a.txt's object (here with a marker in it): it must not be sent again.
  const fs::path kept = f.store / "objects" / f.entry("a.txt").sha256;
  make_directories(kept.parent_path());
  atomic_write_file(kept, "kept\n");
  f.ship("r1");
  EXPECT_EQ(read_file(f.store / "runs" / "r1" / "snapshot" / "a.txt"), "kept\n");
  EXPECT_EQ(read_file(f.store / "runs" / "r1" / "snapshot" / "sub" / "b.py"), "print('b')\n");
}

TEST(Ship, WithoutARunFolderOnlyTheContentArrives) {
  ShipFixture f;
  LocalShell shell;
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{},
                (f.store / "runs" / "p").string(), false);
  EXPECT_TRUE(fs::exists(f.store / "objects" / f.entry("sub/b.py").sha256));
  EXPECT_FALSE(fs::exists(f.store / "runs" / "p"));
}

TEST(Ship, TheStoreNamesWhatItLacksAndMakesNothingThen) {
  ShipFixture f;
  LocalShell shell;
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{},
                (f.store / "runs" / "p").string(), false);
  std::string names;
  for (const auto& e : f.plan.manifest.entries) names += e.sha256 + "\n";
  // No objects ahead, the names, and a tree of one folder: made when the store has it all.
  const std::string tree = std::string(1024, '\0');
  const std::string input = "0\n" + std::to_string(names.size()) + "\n" + names + "1024\n" + tree;
  const std::string script = ship_script(f.store.string(), "n1", (f.store / "runs" / "q").string());
  const ShellResult complete = shell.run_with_input(script, input);
  EXPECT_EQ(complete.exit_code, 0) << complete.errors;
  EXPECT_EQ(complete.output, "");
  EXPECT_TRUE(fs::is_directory(f.store / "runs" / "q"));
  fs::remove(f.store / "objects" / f.entry("a.txt").sha256);
  const ShellResult lacking = shell.run_with_input(
      ship_script(f.store.string(), "n2", (f.store / "runs" / "r").string()), input);
  EXPECT_EQ(lacking.output, f.entry("a.txt").sha256 + "\n:missing\n");
  EXPECT_EQ(lacking.exit_code, 3);
  EXPECT_FALSE(fs::exists(f.store / "runs" / "r")) << "nothing is made while objects lack";
  // Over 16 KiB of names: asked with awk instead of the shell's own loop; the same answer.
  std::string many = names;
  for (int i = 0; i < 300; ++i) many += fmt::format("{:064d}\n", i);
  const ShellResult lacking_many =
      shell.run_with_input(ship_script(f.store.string(), "n3", (f.store / "runs" / "s").string()),
                           "0\n" + std::to_string(many.size()) + "\n" + many + "1024\n" + tree);
  EXPECT_EQ(lacking_many.exit_code, 3);
  EXPECT_EQ(std::count(lacking_many.output.begin(), lacking_many.output.end(), '\n'), 302);
  EXPECT_NE(lacking_many.output.find(f.entry("a.txt").sha256 + "\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(f.store / "runs" / "s"));
}

namespace {

/// This machine's /bin/sh as the target, counting the steps a ship takes.
using CountingShell = test::LocalTargetShell;

}  // namespace

TEST(Ship, WithARecordOfTheStoreAChangedFileShipsInOneStep) {
  ShipFixture f;
  CountingShell shell;
  const std::string run = (f.store / "runs").string();
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{}, run + "/r1");
  EXPECT_EQ(shell.steps, 2) << "no record yet: the store is asked first";
  atomic_write_file(f.plan.project.root / "a.txt", "changed\n");
  f.plan.manifest = build_snapshot(f.plan.project.root, f.plan.project.state_dir() / "objects",
                                   f.plan.project.root / ".mlw" / "hashes.tsv");
  shell.steps = 0;
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{}, run + "/r2");
  EXPECT_EQ(shell.steps, 1) << "the new object goes ahead of the names";
  EXPECT_EQ(read_file(f.store / "runs" / "r2" / "snapshot" / "a.txt"), "changed\n");
  shell.steps = 0;
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{}, run + "/r3");
  EXPECT_EQ(shell.steps, 1) << "nothing changed: one step, nothing sent ahead";
}

TEST(Ship, ARecordThatNoLongerHoldsIsCorrectedByTheTarget) {
  ShipFixture f;
  CountingShell shell;
  const std::string run = (f.store / "runs").string();
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{}, run + "/r1");
  fs::remove_all(f.store / "objects");  // cleaned on the target behind this project's back
  shell.steps = 0;
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{}, run + "/r2");
  EXPECT_EQ(shell.steps, 2) << "the store says what it lacks; those are sent";
  EXPECT_EQ(read_file(f.store / "runs" / "r2" / "snapshot" / "sub" / "b.py"), "print('b')\n");
}

TEST(Ship, WhatTheProbeFoundLackingGoesAheadWithoutAsking) {
  ShipFixture f;
  CountingShell shell;
  std::vector<std::string> lacking;
  for (const auto& e : f.plan.manifest.entries) lacking.push_back(e.sha256);
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{},
                (f.store / "runs" / "r1").string(), true, &lacking);
  EXPECT_EQ(shell.steps, 1);
  EXPECT_EQ(read_file(f.store / "runs" / "r1" / "snapshot" / "a.txt"), "alpha\n");
}

namespace {

/// A target whose store "lacks" a name nobody asked about.
test::AnsweringShell strange_name() {
  return test::AnsweringShell("odd", [](const std::string&, const ShellStreams& streams) {
    streams.on_output("../../etc/passwd\n:missing\n");
    return ShellResult{3, "", ""};
  });
}

}  // namespace

TEST(Ship, ANameTheSnapshotDoesNotHoldIsRefused) {
  ShipFixture f;
  test::AnsweringShell odd = strange_name();
  try {
    ship_snapshot(f.ctx, odd, f.plan, f.store.string(), EnvironmentSpec{},
                  (f.store / "runs" / "r1").string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
    EXPECT_NE(std::string(e.what()).find("odd: the target said its store lacks "
                                         "\"../../etc/passwd\", which is no file of this snapshot"),
              std::string::npos)
        << e.what();
  }
}

namespace {

/// This machine's /bin/sh as a target whose HOME is the fixture's.
test::LocalTargetShell home_shell(const std::string& home) {
  return test::LocalTargetShell("here", home);
}

}  // namespace

TEST(Ship, InTheProbeWhatTheRecordDoesNotNameGoesAheadAndTheStoreSaysWhatItLacks) {
  ShipFixture f;
  f.plan.compute.type = "remote";
  f.plan.compute.python_location = "python3";
  test::LocalTargetShell shell =
      home_shell(f.store.parent_path().string());  // its ~/.mlw is the fixture's store
  // No record: only the names go; the store lacks both.
  ProbeShip ship = ship_in_probe(f.plan, shell);
  probe_target(shell, f.plan.compute, probe_ask(f.plan.compute), "", &ship);
  ShipAnswer answer = read_ship_answer(ship);
  EXPECT_EQ(answer.state, ShipAnswer::State::Lacks);
  EXPECT_EQ(answer.lacking.size(), 2U);
  ship_snapshot(f.ctx, shell, f.plan, f.store.string(), EnvironmentSpec{},
                (f.store / "runs" / "p").string(), false);
  // A change: its object goes with the probe, and the store then holds it all.
  atomic_write_file(f.plan.project.root / "a.txt", "changed\n");
  f.plan.manifest = build_snapshot(f.plan.project.root, f.plan.project.state_dir() / "objects",
                                   f.plan.project.root / ".mlw" / "hashes.tsv");
  ship = ship_in_probe(f.plan, shell);
  probe_target(shell, f.plan.compute, probe_ask(f.plan.compute), "", &ship);
  answer = read_ship_answer(ship);
  EXPECT_EQ(answer.state, ShipAnswer::State::Holds) << join(ship.heard, "\n");
  EXPECT_EQ(read_file(f.store / "objects" / f.entry("a.txt").sha256), "changed\n");
}

TEST(Ship, ADamagedObjectFailsTheShipAndStaysOutOfTheStore) {
  ShipFixture f;
  const ManifestEntry& b = f.entry("sub/b.py");
  const fs::path local = object_path(f.plan.project.state_dir() / "objects", b.sha256, false);
  fs::permissions(local, fs::perms::owner_write, fs::perm_options::add);
  atomic_write_file(local, "print('tampered')\n");
  try {
    f.ship("r1");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
    EXPECT_NE(std::string(e.what()).find("damaged: " + b.sha256), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sub/b.py did not arrive whole at "), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(f.store / "objects" / b.sha256));
  EXPECT_FALSE(fs::exists(f.store / "runs" / "r1"));
}

// A file written to between its hash and its ship (a run writing into the project while the
// next is submitted; found with six submits at once): what arrives is not what was hashed. The
// user is told which file changed and to submit again, as for a local snapshot, not only the
// target's "damaged: HASH".
TEST(Ship, AFileChangedAfterItsHashIsNamedAsChanged) {
  ShipFixture f;
  const ManifestEntry& b = f.entry("sub/b.py");
  fs::remove_all(f.plan.project.state_dir() / "objects");  // sent from the project, as remotely
  atomic_write_file(f.plan.project.root / "sub" / "b.py", "print('c')\n");  // the same size
  try {
    f.ship("r1");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
    EXPECT_NE(std::string(e.what()).find(
                  ": sub/b.py changed while the snapshot was taken; submit again (damaged: " +
                  b.sha256 + ")"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(f.store / "runs" / "r1"));
}

TEST(Ship, AFailedShipForgetsWhatTheStoreHeld) {
  ShipFixture f;
  f.ship("r0");  // the record now names both objects
  const fs::path records = f.plan.project.state_dir() / "cache" / "shipped";
  ASSERT_FALSE(fs::is_empty(records));
  fs::remove_all(f.store / "objects");
  const ManifestEntry& b = f.entry("sub/b.py");
  const fs::path local = object_path(f.plan.project.state_dir() / "objects", b.sha256, false);
  fs::permissions(local, fs::perms::owner_write, fs::perm_options::add);
  atomic_write_file(local, "print('tampered')\n");
  EXPECT_THROW(f.ship("r1"), Error);
  EXPECT_TRUE(fs::is_empty(records))
      << "after a failed ship the store's content is not known: the next one asks first";
}

TEST(Ship, ADroppedUploadIsAdoptedGoodObjectsKeptDamagedOnesSentAgain) {
  ShipFixture f;
  const ManifestEntry& a = f.entry("a.txt");
  const ManifestEntry& b = f.entry("sub/b.py");
  // What a connection dropped mid-upload leaves on the target: one whole object, one cut short.
  const fs::path leftover = f.store / "incoming" / "dropped-nonce";
  make_directories(leftover);
  atomic_write_file(leftover / a.sha256, "alpha\n");
  atomic_write_file(leftover / b.sha256, "print(");
  std::ostringstream log;
  const auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "ship-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);
  f.ship("r1");
  spdlog::set_default_logger(previous);
  EXPECT_NE(log.str().find("shipping 1 objects"), std::string::npos) << log.str();
  EXPECT_EQ(read_file(f.store / "objects" / a.sha256), "alpha\n");
  EXPECT_EQ(read_file(f.store / "objects" / b.sha256), "print('b')\n");
  EXPECT_TRUE(fs::is_empty(f.store / "incoming"));
  EXPECT_EQ(read_file(f.store / "runs" / "r1" / "snapshot" / "sub" / "b.py"), "print('b')\n");
}

TEST(Ship, AFailingTarFailsTheShipAndKeepsTheObjectsItFinished) {
  // Both ways the target checks an upload: after it (small), and each object as tar goes on to
  // the next (over 4 MiB).
  for (const std::size_t big : {std::size_t{0}, std::size_t{5} << 20}) {
    ShipFixture f;
    if (big > 0) {
      const fs::path root = f.plan.project.root;
      atomic_write_file(root / "big.bin", std::string(big, 'x'));
      f.plan.manifest =
          build_snapshot(root, root / ".mlw" / "objects", root / ".mlw" / "hashes.tsv");
    }
    // The target's first tar (the objects') extracts everything and then fails, as one cut
    // short by a full disk can: the ship must fail, not take the upload for whole and go on to
    // make the run folder, while the objects that were checked stay in the store and the next
    // ship completes the run.
    const fs::path bin = f.dir.path() / "bin";
    make_directories(bin);
    atomic_write_file(bin / "tar",
                      "#!/bin/sh\n[ -e \"$0.once\" ] && exec /bin/tar \"$@\"\n: >\"$0.once\"\n"
                      "/bin/tar \"$@\"\nexit 2\n");
    fs::permissions(bin / "tar", fs::perms::owner_all);
    const std::string path = std::getenv("PATH");
    ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
    EXPECT_THROW(f.ship("r1"), Error) << big;
    ::setenv("PATH", path.c_str(), 1);
    EXPECT_EQ(read_file(f.store / "objects" / f.entry("a.txt").sha256), "alpha\n");
    EXPECT_EQ(read_file(f.store / "objects" / f.entry("sub/b.py").sha256), "print('b')\n");
    EXPECT_FALSE(fs::exists(f.store / "runs" / "r1")) << big;
    f.ship("r1");
    EXPECT_EQ(read_file(f.store / "runs" / "r1" / "snapshot" / "a.txt"), "alpha\n");
    EXPECT_TRUE(fs::is_empty(f.store / "incoming")) << big;
  }
}

}  // namespace mlw

namespace mlw {
namespace {

/// A target that answers the ship's question with object names for ever (here: 64 MiB of them,
/// in 64 KiB chunks, unless mlw stops reading first), counting what it sent.
test::AnsweringShell endless_answer(std::size_t& sent) {
  return test::AnsweringShell("liar", [&sent](const std::string&, const ShellStreams& streams) {
    std::string chunk;
    while (chunk.size() < 65536) chunk += std::string(64, '0') + "\n";
    for (int i = 0; i < 1024; ++i) {
      streams.on_output(chunk);
      sent += chunk.size();
    }
    return ShellResult{0, "", ""};
  });
}

}  // namespace

TEST(Ship, AnAnswerLongerThanAnyListOfTheFilesAskedAboutStopsTheShip) {
  ShipFixture f;
  std::size_t sent = 0;
  test::AnsweringShell liar = endless_answer(sent);
  try {
    ship_snapshot(f.ctx, liar, f.plan, f.store.string(), EnvironmentSpec{},
                  (f.store / "runs" / "r1").string());
    FAIL() << "the ship went on";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
    EXPECT_NE(std::string(e.what()).find("liar: the target answered the ship with more than"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LE(sent, 2u * 65536);  // read no further than the bound
}

}  // namespace mlw
