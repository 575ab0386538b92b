"""Synthetic Hermes homes for speed and scale benchmarks.

The schema, FTS tables and triggers are Hermes's own: ``SessionDB`` creates the
file and its triggers fill ``messages_fts``/``messages_fts_trigram`` as we bulk
insert through its connection. Projects are written with Hermes's
``projects_db``. Content is a deterministic mix of English prose, Chinese,
code identifiers, paths and error codes, with Zipf-distributed vocabulary and
a per-project topic skew, so that common words are common and project scopes
differ the way real repositories do.

Import this only with ``HERMES_HOME`` already pointing at a scratch folder.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

EN_WORDS = """
the a to of and in is it that for you this with on be are as not have can do
we at if your or but from by so will was what all there an my one when would
should please make sure just also then here need use file code test run build
error fix bug issue change update add remove check config server client request
response data model user session project folder path value function method class
module import return type string number list dict key index query search result
cache memory disk network socket connection timeout retry backoff loop thread
process worker queue job task schedule cron event handler callback promise async
await future lock mutex race deadlock commit branch merge rebase push pull review
deploy release version tag docker image container kubernetes pod service ingress
database table column row schema migration transaction rollback sqlite postgres
redis kafka message broker topic partition offset consumer producer stream batch
token auth login logout password secret key certificate tls ssl https header
cookie cors proxy gateway route endpoint api rest graphql grpc json yaml toml
parse serialize encode decode compress buffer byte chunk page limit offset sort
filter map reduce group join window frame render component state props hook
effect context reducer store action dispatch selector layout style theme color
font icon button input form field validate submit click scroll resize animation
webpack vite rollup babel typescript javascript python rust golang java kotlin
swift ruby php shell bash zsh terminal command argument flag option environment
variable path directory symlink permission owner group mode chmod chown mount
volume backup restore snapshot archive log trace debug info warn fatal panic
exception stack frame line column offset pointer reference value copy move clone
borrow lifetime generic trait interface struct enum union tuple array vector
slice matrix tensor gradient loss optimizer epoch batch learning rate dropout
layer attention embedding vector similarity cosine distance nearest neighbor
benchmark latency throughput percentile median memory profile flame graph
regression performance slow fast optimize hot path allocation garbage collector
leak pressure swap cpu core thread pool scheduler priority fairness starvation
plugin extension hook registry manifest loader discovery entry point package
install upgrade downgrade dependency lockfile resolver wheel sdist pip poetry
conda venv virtualenv interpreter runtime compiler linker binary library shared
static dynamic symbol export visible hidden private public protected internal
refactor rename extract inline split merge simplify cleanup delete deprecate
document readme changelog comment docstring example tutorial guide reference
flaky intermittent reproduce minimal repro bisect culprit root cause workaround
patch hotfix rollback incident outage alert pager oncall postmortem monitor
metric dashboard grafana prometheus alertmanager exporter scrape label cardinality
websocket reconnect heartbeat ping pong keepalive idle close handshake upgrade
upload download stream multipart boundary content length encoding charset utf
locale timezone date time timestamp epoch duration interval calendar holiday
invoice payment refund subscription plan billing customer account tenant org
team member role permission admin owner viewer editor guest invite accept
email notification webhook slack telegram discord sms push badge unread
search ranking relevance recall precision keyword semantic hybrid fusion rerank
chunk overlap window context prompt completion model temperature sampling
agent tool call result schema argument dispatch registry toolset platform
""".split()

ZH_WORDS = """
修改 服务 服务端 客户端 配置 超时 重试 连接 断开 重连 心跳 日志 错误 异常
数据库 迁移 事务 回滚 索引 查询 搜索 结果 缓存 内存 磁盘 网络 线程 进程
队列 任务 调度 定时 事件 回调 异步 并发 死锁 竞态 提交 分支 合并 发布
版本 镜像 容器 部署 上线 下线 回退 监控 告警 指标 面板 延迟 吞吐 性能
优化 瓶颈 内存泄漏 垃圾回收 插件 扩展 钩子 注册 加载 发现 依赖 安装 升级
降级 编译 链接 运行 测试 单元测试 集成测试 覆盖率 重构 重命名 拆分 清理
文档 注释 示例 教程 用户 会话 项目 目录 路径 文件 权限 密钥 令牌 登录
认证 授权 证书 代理 网关 路由 接口 请求 响应 解析 序列化 编码 解码 压缩
分页 排序 过滤 分组 窗口 上下文 提示词 模型 向量 嵌入 相似度 召回 排名
关键词 语义 混合 融合 中文 英文 代码 符号 错误码 报错 修复 问题 原因 方案
设计 评审 讨论 需求 功能 特性 界面 按钮 表单 输入 校验 渲染 组件 状态
前端 后端 全栈 移动端 桌面端 命令行 终端 脚本 环境变量 参数 选项 默认值
服务器 数据 模块 函数 方法 类型 字符串 数字 列表 字典 键值 返回 导入
大别山 长江 黄河 广西 桂林 漓江 北京 上海 深圳 杭州 成都 武汉 南京
支付 退款 订阅 账单 客户 账户 租户 团队 成员 角色 管理员 邀请 通知
""".split()

SYMBOL_STEMS = """
ERR_CONNECTION_REFUSED ERR_CONNECTION_RESET ECONNRESET ETIMEDOUT ENOENT EACCES
SIGKILL SIGTERM OOMKilled CrashLoopBackOff ImagePullBackOff NullPointerException
KeyError ValueError TypeError IndexError AttributeError RuntimeError
""".split()

CODE_NAMES = """
parse_config load_settings retry_with_backoff open_session close_session
build_index search_messages resolve_project apply_migration flush_queue
handle_request send_response encode_payload decode_payload render_page
fetch_user update_profile create_invoice refund_payment schedule_job
""".split()

SYSTEM_PROMPT_BASE = (
    "You are Hermes, a helpful agent. Follow the user's instructions carefully. "
    "Use tools when they help. Prefer small, verifiable steps. "
) * 40


def _zipf_weights(n: int, s: float = 1.05) -> list[float]:
    return [1.0 / ((i + 1) ** s) for i in range(n)]


@dataclass
class SynthSpec:
    messages: int = 1_000_000
    sessions: int = 20_000
    projects: int = 200
    seed: int = 7
    system_prompt_chars: int = 6_000


@dataclass
class SynthWorld:
    """What was generated, so a benchmark can pick realistic queries."""

    home: Path
    project_folders: dict[str, str] = field(default_factory=dict)  # project id -> folder
    session_ids: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    messages: int = 0
    seconds: float = 0.0


def _project_names(n: int, rng: random.Random) -> list[str]:
    # Folder names that share prefixes and carry % and _ on purpose: the
    # scope filter must treat them as plain text.
    stems = ["app", "api", "web", "core", "infra", "data", "ml", "docs", "tools", "svc"]
    names = []
    for i in range(n):
        stem = stems[i % len(stems)]
        suffix = i // len(stems)
        name = stem if suffix == 0 else f"{stem}{suffix}"
        if i % 23 == 5:
            name += "_v2"
        if i % 41 == 7:
            name += "%x"
        names.append(name)
    return names


class _Writer:
    def __init__(self, rng: random.Random, topic_words: list[str]):
        self.rng = rng
        self.en_w = _zipf_weights(len(EN_WORDS))
        self.zh_w = _zipf_weights(len(ZH_WORDS), 0.9)
        self.topic = topic_words

    def en(self, n: int) -> str:
        words = self.rng.choices(EN_WORDS, self.en_w, k=n)
        if self.topic:
            for i in range(0, n, 7):
                words[i] = self.rng.choice(self.topic)
        return " ".join(words)

    def zh(self, n: int) -> str:
        return "".join(self.rng.choices(ZH_WORDS, self.zh_w, k=n)) + "。"

    def symbol(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice(SYMBOL_STEMS)
        if r < 0.55:
            return f"{self.rng.choice(CODE_NAMES)}()"
        if r < 0.75:
            return f"src/{self.rng.choice(CODE_NAMES)}.py"
        return f"0x{self.rng.getrandbits(32):08X}"

    def message(self, role: str) -> tuple[str, list[str]]:
        rng = self.rng
        parts, symbols = [], []
        kind = rng.random()
        n = rng.randint(8, 90)
        if kind < 0.55:
            parts.append(self.en(n))
        elif kind < 0.75:
            parts.append(self.zh(max(3, n // 4)))
        elif kind < 0.9:
            parts.append(self.zh(max(2, n // 8)) + " " + self.en(n // 2))
        else:
            parts.append(self.en(n // 2))
        if rng.random() < 0.25:
            sym = self.symbol()
            symbols.append(sym)
            parts.append(f"`{sym}`" if rng.random() < 0.5 else sym)
        if role == "assistant" and rng.random() < 0.2:
            parts.append("```python\n" + f"def {rng.choice(CODE_NAMES)}(x):\n    return x\n" + "```")
        return " ".join(parts), symbols


def build(home: Path, spec: SynthSpec, progress=None) -> SynthWorld:
    """Build ``home/state.db`` and ``home/projects.db``; return the world."""
    from hermes_cli import projects_db
    from hermes_state import SessionDB

    rng = random.Random(spec.seed)
    started = time.time()
    world = SynthWorld(home=home)
    work = home.parent / (home.name + "-work")

    names = _project_names(spec.projects, rng)
    folder_of: list[str] = []
    with projects_db.connect_closing(home / "projects.db") as pconn:
        for i, name in enumerate(names):
            folder = str(work / name)
            if i % 17 == 3 and i > 0:
                # A nested project inside an earlier one (monorepo service).
                folder = f"{folder_of[i - 1]}/services/{name}"
            pid = projects_db.create_project(pconn, name=name, folders=[folder])
            world.project_folders[pid] = folder
            folder_of.append(folder)

    # Project sizes are skewed (a few big repos, a long tail) like real use.
    weights = [rng.lognormvariate(0, 0.9) for _ in range(spec.projects)]
    auto_roots = [str(work / "auto" / f"repo{i}") for i in range(20)]

    db = SessionDB(db_path=home / "state.db")
    conn = db._conn
    sp_extra = spec.system_prompt_chars - len(SYSTEM_PROMPT_BASE)
    system_prompt = SYSTEM_PROMPT_BASE + ("x" * max(0, sp_extra))
    # Session lengths vary, but add up to exactly the requested total.
    lengths = [max(0.1, rng.gauss(1.0, 0.35)) for _ in range(spec.sessions)]
    scale = spec.messages / sum(lengths)
    counts = [max(1, int(x * scale)) for x in lengths]
    counts[-1] += spec.messages - sum(counts)
    t0 = 1_735_689_600.0  # 2025-01-01
    msg_total = 0
    conn.execute("BEGIN")
    try:
        for s in range(spec.sessions):
            ts = t0 + s * (365 * 86400 / spec.sessions)
            sid = time.strftime("%Y%m%d_%H%M%S", time.gmtime(ts)) + f"_{s:06x}"
            r = rng.random()
            parent = None
            cwd = root = None
            source = "cli"
            if r < 0.03:
                source = "telegram"  # home bucket: no cwd
                p = rng.randrange(spec.projects)
            elif r < 0.08 and world.session_ids:
                source = "subagent"
                parent = rng.choice(world.session_ids[-50:])
                p = rng.randrange(spec.projects)
            elif r < 0.15:
                cwd = rng.choice(auto_roots) + "/src"
                root = cwd.rsplit("/", 1)[0]
                p = rng.randrange(spec.projects)
            else:
                p = rng.choices(range(spec.projects), weights)[0]
                cwd = folder_of[p] + rng.choice(["", "/src", "/tests", "/docs/api"])
                root = folder_of[p] if rng.random() < 0.6 else None
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, parent_session_id, cwd, "
                "git_repo_root, system_prompt, title, model) VALUES (?,?,?,?,?,?,?,?,?)",
                (sid, source, ts, parent, cwd, root, system_prompt,
                 f"{names[p]} session {s}", "synthetic/model"),
            )
            world.session_ids.append(sid)
            topic = rng.sample(EN_WORDS[200:], 6) + [names[p]]
            writer = _Writer(rng, topic)
            n_msgs = counts[s]
            rows = []
            for k in range(n_msgs):
                role = ("user", "assistant", "assistant", "tool")[k % 4] if k % 4 else "user"
                text, syms = writer.message(role)
                world.symbols.extend(syms)
                tool_name = "terminal" if role == "tool" else None
                rows.append((sid, role, text, tool_name, ts + k * 10.0))
            conn.executemany(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp) "
                "VALUES (?,?,?,?,?)",
                rows,
            )
            conn.execute("UPDATE sessions SET message_count = ? WHERE id = ?", (len(rows), sid))
            msg_total += len(rows)
            if progress and s % 500 == 0:
                progress(s, spec.sessions, msg_total)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        db.close()
    world.messages = msg_total
    world.seconds = time.time() - started
    (home / "synth-world.json").write_text(json.dumps({
        "project_folders": world.project_folders,
        # A sample that keeps repeats: common symbols are searched more often.
        "symbols": random.Random(spec.seed).sample(world.symbols, min(5000, len(world.symbols))),
        "messages": world.messages,
        "sessions": len(world.session_ids),
        "spec": spec.__dict__,
    }))
    return world


def load_world(home: Path) -> dict:
    return json.loads((home / "synth-world.json").read_text())


if __name__ == "__main__":  # quick manual build: python bench/synth.py HOME [messages]
    import sys

    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    os.environ["HERMES_HOME"] = str(target)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    w = build(target, SynthSpec(messages=n, sessions=max(10, n // 50)),
              progress=lambda s, t, m: print(f"  {s}/{t} sessions, {m} messages", flush=True))
    print(f"built {w.messages} messages in {w.seconds:.0f}s")
