"""The lessons in the project's own words, English and Chinese: the one source of the
handbook's lesson pages (docs/hooks/handbook.py renders them).

A lesson is one idea the workshop teaches (C01..C50). Its id, title, articles, needs and
time come from the lab registry (``lockshop.workshop.labs.LABS``); what is here is the
text around it: the lesson said in full, what each article says and where (a paraphrase,
with the article's own section heading, never a quotation), what to watch when the lab
runs, the fix, and the modules to read. Each text has an English and a Chinese half
(``Text``), so that both pages come from one record; a later pass may move the Chinese
into the message catalog.

Which exercise practises a lesson comes from ``lockshop.exercises`` (each exercise names
the lessons its checks grade); where that package cannot be imported, from
``EXERCISE_PATH`` below, the path as it was planned.

A lab added to the registry without its text here fails ``tests/test_docs.py``: every lab
has its lesson, and every article a lab names has its paraphrase.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Text:
    en: str
    zh: str

    def __call__(self, language: str) -> str:
        return self.zh if language.startswith("zh") else self.en


@dataclass(frozen=True)
class Lesson:
    id: str
    #: The registry's title in Chinese (the English one is the lab's own).
    title_zh: str
    #: The lesson said in full: what happens, and what stops it.
    claim: Text
    #: Per article id: what that article says, in our words, and under which heading.
    where: dict[str, Text]
    #: What to look at while the lab runs (its steps, the console's lock view).
    watch: Text
    fix: Text
    #: The files to read, the lock first.
    read: tuple[str, ...]


def T(en: str, zh: str) -> Text:  # noqa: N802 - reads as a table below
    return Text(en, zh)


#: The five articles: title, author or site, date (the References page gives them in full).
ARTICLES = {
    "A0": {"title": "分布式锁", "by": "当年明月123", "date": "2020-01-07",
           "about": T("why a lock; an expired-order cleanup job; Redis from SETNX to a reentrant "
                      "hash in Lua; ZooKeeper's sequential nodes",
                      "为什么要锁；超时订单清理任务；Redis 从 SETNX 到 Lua 写的可重入哈希；"
                      "ZooKeeper 的顺序节点")},
    "A1": {"title": "关于分布式锁", "by": "kongzheng1993", "date": "2019-06-11",
           "about": T("eight Tomcats send eight text messages; database, Redis and ZooKeeper "
                      "locks; Redlock; the herd effect; Quartz's cluster",
                      "8 台 Tomcat 发出 8 条短信；数据库、Redis、ZooKeeper 三种锁；Redlock；"
                      "羊群效应；Quartz 集群")},
    "A2": {"title": "Redis分布式锁唯一标识避免误释放的案例分析", "by": "摩柯社区",
           "date": "2021-05-28",
           "about": T("a unique token so that no client releases another's lock; WATCH/MULTI "
                      "for the release; how long a lease should be",
                      "用唯一标识避免误释放别人的锁；用 WATCH/MULTI 释放；过期时间设多长")},
    "A3": {"title": "Zookeeper 实现分布式锁", "by": T("a GitHub markdown note",
                                                     "GitHub 上的一篇 Markdown 笔记"), "date": "",
           "about": T("two ticket offices sell one seat; ZooKeeper's simple lock, the sequential "
                      "lock and the read/write lock",
                      "两个售票点卖同一个座位；ZooKeeper 的简单锁、顺序锁和读写锁")},
    "A4": {"title": "分布式锁用Redis or Zookeeper?", "by": "", "date": "2020-03-19",
           "about": T("oversold stock; SET NX PX and a Lua release; Redlock; Redisson's "
                      "watchdog; ZooKeeper with Curator; Redis against ZooKeeper",
                      "库存超卖；SET NX PX 加 Lua 释放；Redlock；Redisson 的看门狗；"
                      "ZooKeeper 与 Curator；Redis 与 ZooKeeper 的取舍")},
}

#: The exercises as planned, for when ``lockshop.exercises`` cannot be imported: number ->
#: (skeleton file, title, lessons). The package, where it imports, is what counts.
EXERCISE_PATH: dict[str, tuple[str, Text, tuple[str, ...]]] = {
    "1": ("setnx_lock.py", T("A lock with SETNX, released with DEL",
                             "用 SETNX 加锁、DEL 释放"), ("C09",)),
    "2": ("lease_lock.py", T("A lease: SET NX PX in one command",
                             "租约：一条 SET NX PX 命令"), ("C09", "C10")),
    "3": ("token_lock.py", T("A token per holder, and a Lua compare-and-delete",
                             "每个持有者一个唯一标识，用 Lua 比较并删除"), ("C11", "C12")),
    "4": ("reentrant_lock.py", T("A reentrant lock: a hash of owner to count, in Lua",
                                 "可重入锁：Lua 里的“所有者 → 次数”哈希"),
          ("C13", "C27", "C28")),
    "5": ("watchdog_lock.py", T("A watchdog that renews the lease while the holder lives",
                                "看门狗：持有者活着就为锁续期"), ("C14", "C36")),
    "6": ("fenced_lock.py", T("A fencing token the shop's write checks",
                              "防护令牌：店铺写入时会核对它"), ("C15",)),
    "7": ("ephemeral_lock.py", T("A ZooKeeper lock on one ephemeral node",
                                 "一个临时节点的 ZooKeeper 锁"), ("C02", "C18")),
    "8": ("queue_lock.py", T("The fair lock: ephemeral sequential nodes, each watching the one "
                             "ahead", "公平锁：临时顺序节点，各自监听前一个"),
          ("C19", "C20", "C38")),
    "9": ("redlock.py", T("Redlock over five servers", "五台服务器上的 Redlock"),
          ("C16", "C33")),
    "10": ("rw_lock.py", T("A read/write lock", "读写锁"), ("C21", "C39")),
}


# The lessons, in id order. Section headings are the articles' own.
_LESSONS = (
    Lesson(
        "C01", "不加锁，秒杀卖出的比库存多；每个商品一把锁，正好卖完库存",
        T("A read-check-write that nothing guards lets concurrent buyers read the same "
          "stock and each write it minus one: the shop sells more than it had. One lock per "
          "product makes the buyers take turns, and exactly the stock is sold.",
          "“读库存、判断、写回”这一段没有任何保护时，并发的买家读到同一个库存，各自减一再写回，"
          "结果卖出的比实际库存多。给每个商品加一把锁，买家轮流进入，卖出的正好是库存数。"),
        {"A0": T("Section 1.1 (业务场景) sets the scene: an online shop that takes stock off at "
                 "order time, and several order services working on the same goods.",
                 "1.1 节（业务场景）设定了场景：下单时扣减库存的电商系统，多个订单服务同时处理"
                 "同一批商品。"),
         "A4": T("The opening section (为什么用分布式锁？) walks through two requests that both "
                 "see a stock of 1 and both sell: the classic oversell. A lock around the "
                 "read, check and write is its answer.",
                 "开篇（为什么用分布式锁？）讲了两个请求都看到库存为 1、都卖出去的过程，这就是典型的"
                 "库存超卖；办法是把读、判断、写三步用锁包起来。")},
        T("The broken half's sold figure against the stock: several times more sold than "
          "there was, and lost updates beside it. Then the fix half: sold equals the stock.",
          "看问题版本里“卖出”与库存的对比：卖出数是库存的好几倍，旁边还有丢失更新。"
          "再看修复版本：卖出正好等于库存。"),
        T("Take a lock named after the product (`product:<id>`) before the read and release it "
          "after the commit.",
          "在读库存之前获取以商品命名的锁（`product:<id>`），提交之后再释放。"),
        ("shop/orders/order_path.py", "locks/no_lock.py", "locks/redis_lock.py")),
    Lesson(
        "C02", "两个售票点卖出同一个座位；加上 ZooKeeper 锁，只卖一次",
        T("Two ticket offices both read that six seats are free, both take the first one, "
          "and both write five: one seat sold twice. Inside a ZooKeeper lock on the show, "
          "the second office reads after the first has written.",
          "两个售票点都读到还剩 6 个座位，都拿走第一个，都写回 5：同一个座位卖了两次。"
          "放进这场演出的 ZooKeeper 锁里，第二个售票点会在第一个写完之后才去读。"),
        {"A3": T("Under 分布式锁应用场景 the note's ticket system has service 1 and service 2 "
                 "both read 6 and both write back 5.",
                 "“分布式锁应用场景”一节的购票系统里，服务 1 和服务 2 都读到 6，都写回 5。")},
        T("The seat map: the broken half books seat A1 twice (a double booking); the fix "
          "half books it once and the other office gets the next seat.",
          "看座位图：问题版本把 A1 卖了两次（重复订座）；修复版本只卖一次，另一个售票点拿到"
          "下一个座位。"),
        T("Sell each seat inside the show's lock (here zk_fair): read the free seats, take "
          "one, write, then release.",
          "每个座位都在这场演出的锁里卖（这里用 zk_fair）：读空座、选一个、写回，然后释放。"),
        ("locks/zk_fair.py", "shop/orders/order_path.py")),
    Lesson(
        "C03", "线程锁在一个进程里正确，跨进程毫无用处",
        T("A thread lock (Java's synchronized, Python's threading.Lock) lives in one "
          "process's memory. With one instance the sale is correct; with three, each "
          "instance has its own lock and they sell at the same time.",
          "线程锁（Java 的 synchronized、Python 的 threading.Lock）只存在于一个进程的内存里。"
          "只有一个实例时卖得正确；三个实例时，各有各的锁，照样同时卖。"),
        {"A0": T("Section 1.2.1 (线程锁): a lock is a mark in memory that every thread of one "
                 "JVM can see; several order services are several JVMs, and the mark is not "
                 "shared. Section 1.2.2 (分布式锁) moves the mark where every process sees it.",
                 "1.2.1 节（线程锁）：锁是内存里的一个标记，同一个 JVM 的线程都看得见；多个订单服务"
                 "就是多个 JVM，标记并不共享。1.2.2 节（分布式锁）把标记放到所有进程都看得见的地方。")},
        T("The same sale twice with `local`: on one instance nothing is oversold; on three "
          "instances the holds overlap and the audit says WRONG.",
          "用 `local` 卖两次：一个实例时没有超卖；三个实例时持有互相重叠，审计结论是“出错”。"),
        T("A lock that lives outside the processes: Redis, ZooKeeper or the database.",
          "把锁放到进程之外：Redis、ZooKeeper 或数据库。"),
        ("locks/local_lock.py", "locks/redis_lock.py")),
    Lesson(
        "C04", "每个节点都跑清理任务，过期订单的库存按节点数被退回多次；任务锁让它只跑一次",
        T("A scheduled job that returns the stock of expired orders runs on every node at "
          "the same fire time. Each node reads the same orders before any writes, so the "
          "stock comes back once per node. A job lock lets one node run each fire time.",
          "退回过期订单库存的定时任务在每个节点的同一时刻触发。每个节点都在别人写之前读到同样的"
          "订单，于是库存按节点数被退回多次。加一把任务锁，每个触发时刻只让一个节点执行。"),
        {"A0": T("Section 1.1 (业务场景): a cluster of 100 order-timeout checkers; services A "
                 "and B both find the same unpaid order, both cancel it and both put its "
                 "stock back, so the stock grows twice.",
                 "1.1 节（业务场景）：100 个节点的超时订单检查集群；订单服务 A 和 B 查到同一个未支付"
                 "订单，都取消它，都恢复库存，库存被加了两次。")},
        T("The number of restorations per expired order: three (one per instance) in the "
          "broken half, one in the fix half.",
          "看每个过期订单被退回库存的次数：问题版本是 3 次（每个实例一次），修复版本是 1 次。"),
        T("The job takes the lock `job:<name>` once per fire time, skips the fire time if "
          "another node holds it, and checks the lock again in its write's transaction.",
          "任务在每个触发时刻尝试一次获取 `job:<名字>` 锁，别的节点持有就跳过，并在写入的事务里"
          "再核对一次锁。"),
        ("shop/jobs/guards.py", "shop/jobs/tasks.py")),
    Lesson(
        "C05", "N 台服务器上的提醒任务给每位顾客发 N 条消息；任务锁只发一条",
        T("A reminder job on N servers reads the same unpaid orders on each, so every "
          "customer gets N messages. Guarded by a job lock, each customer gets one.",
          "N 台服务器上的提醒任务各自读到同样的未支付订单，每位顾客收到 N 条消息。"
          "用任务锁保护后，每位顾客只收到一条。"),
        {"A1": T("The opening story: a planned-task reminder put live on eight Tomcats sent "
                 "every user eight text messages, one per Tomcat; 想办法 then finds that "
                 "Quartz clusters by a database lock.",
                 "开头的故事：计划任务短信提醒上线后，8 台 Tomcat 各跑一遍，每个用户收到 8 条短信；"
                 "“想办法”一节随后发现 Quartz 的集群靠数据库锁实现。")},
        T("Reminders per customer: three in the broken half, one in the fix half.",
          "看每位顾客收到的提醒数：问题版本 3 条，修复版本 1 条。"),
        T("Guard the job with a lock per job and fire time, as in C04.",
          "和 C04 一样，用按任务和触发时刻划分的锁保护任务。"),
        ("shop/jobs/guards.py", "shop/jobs/tasks.py")),
    Lesson(
        "C06", "没有过期字段的锁行：持有者崩溃后所有人都被挡住；加上过期字段就能释放",
        T("A lock made by inserting a row with a unique key is freed by deleting it. A holder "
          "that dies before its delete leaves the row for good, and every later buyer waits "
          "until a person removes it. An expiry column (a lease) lets the next buyer take an "
          "expired row over.",
          "插入一行唯一键来加锁、删掉这一行来释放。持有者在删除之前死掉，这一行就永远留着，"
          "之后的买家都要等到有人手工删掉它。加一个过期字段（租约），下一个买家就能接管过期的行。"),
        {"A1": T("基于表主键唯一做分布式锁: the database lets only one insert of a key succeed; "
                 "whoever inserted holds the lock, and deleting the row releases it. The "
                 "article does not say what happens when the holder never deletes.",
                 "“基于表主键唯一做分布式锁”：数据库只让同一个主键插入成功一次，插入成功的就持有锁，"
                 "删除这条记录就释放。文章没有说持有者一直不删会怎样。")},
        T("After the holder is killed: refused, refused, until the row is deleted by hand "
          "(broken); granted once the row's 500 ms lease has run out (fix).",
          "持有者被杀掉之后：问题版本一直被拒绝，直到手工删除那一行；修复版本在这一行的 "
          "500 毫秒租约过期后就拿到了锁。"),
        T("An expires_at column written with the row; an insert that finds an expired row "
          "takes it over in the same transaction.",
          "插入时写上 expires_at 字段；发现行已过期的请求在同一个事务里接管它。"),
        ("locks/table_lock.py", "locks/table_broken.py")),
    Lesson(
        "C07", "用版本号做乐观锁：冲突变成重试，不会超卖",
        T("Optimistic locking takes no lock: the write says WHERE version = what I read, "
          "and a write that finds the version changed reads again. Conflicts cost retries; "
          "nothing is oversold.",
          "乐观锁不加锁：写入时带上 WHERE version = 我读到的版本，发现版本变了就重新读。"
          "冲突的代价是重试，不会超卖。"),
        {"A1": T("基于表字段版本号做分布式锁: a version column per table, checked by every "
                 "write; the article warns of the extra database work under high concurrency.",
                 "“基于表字段版本号做分布式锁”：每张表加一个版本号字段，每次写入都要判断；"
                 "文章提醒高并发下会增加数据库的负担。")},
        T("Sold equals the stock, and the retries column: many retries for the same sales.",
          "卖出等于库存；再看重试列：同样的销量付出了大量重试。"),
        T("Nothing to fix: this is a correct strategy. Its cost is the retries, and a "
          "bounded number of them (a 503 after 20 conflicts).",
          "不需要修：这本身就是正确的策略。代价是重试，而且重试次数有上限（冲突 20 次后返回 503）。"),
        ("shop/orders/transactions.py",)),
    Lesson(
        "C08", "SELECT … FOR UPDATE 只有通过唯一索引才只锁一行；没有索引，InnoDB 会锁住多得多的行",
        T("SELECT … FOR UPDATE takes row locks only on the rows an index leads it to. With "
          "no unique index on the looked-up column, InnoDB locks every row it scans, and an "
          "order for another product waits.",
          "SELECT … FOR UPDATE 只会锁住通过索引找到的行。查找的列上没有唯一索引时，InnoDB 会"
          "锁住扫描过的所有行，另一个商品的订单也得等。"),
        {"A1": T("基于数据库排他锁做分布式锁: InnoDB uses row locks only when the lookup goes "
                 "through an index, otherwise a table lock; the index must be unique; the "
                 "commit releases the lock.",
                 "“基于数据库排他锁做分布式锁”：InnoDB 只有通过索引检索时才用行级锁，否则用表级锁；"
                 "这个索引一定要是唯一索引；提交即释放锁。")},
        T("Whether an order for product 2 waits while product 1 is locked: it waits "
          "without the index, and goes through with it.",
          "看锁住商品 1 时，商品 2 的订单是否要等：没有索引时要等，有唯一索引时直接通过。"),
        T("A unique index on the column the FOR UPDATE looks up.",
          "在 FOR UPDATE 查找的列上建唯一索引。"),
        ("lockshop/workshop/labs/mariadb.py", "shop/orders/transactions.py")),
    Lesson(
        "C09", "没有过期时间的 SETNX：持有者被杀后所有人都被挡住；SET NX PX 让锁在过期时间到了之后自动释放",
        T("SETNX takes the lock and DEL frees it. A holder killed inside its critical section "
          "never deletes, and with no expiry the key stays until a person deletes it. SET "
          "key value NX PX lease gives the key its expiry in the same command: the lock frees "
          "one lease after the death.",
          "SETNX 加锁、DEL 释放。持有者在临界区里被杀掉就永远不会删除，没有过期时间的键会一直留着，"
          "直到有人手工删除。SET key value NX PX 租约在同一条命令里给键设上过期时间："
          "持有者死后过一个租约，锁就释放了。"),
        {"A0": T("Section 2.1 (基本实现): SETNX gives mutual exclusion and DEL releases; if the "
                 "server dies the lock is never deleted, so set a validity time with SET's NX "
                 "and PX (or EX) options.",
                 "2.1 节（基本实现）：SETNX 实现互斥、DEL 释放；服务器宕机锁就永远删不掉，所以要用 "
                 "SET 的 NX 和 PX（或 EX）参数给锁加一个有效时间。"),
         "A1": T("基于 REDIS 的 SETNX()、EXPIRE() 方法做分布式锁: setnx to take the place, expire "
                 "to avoid a deadlock, delete when done.",
                 "“基于 REDIS 的 SETNX()、EXPIRE() 方法做分布式锁”：setnx 占位，expire 避免死锁，"
                 "业务做完 delete。")},
        T("The key's TTL after the kill: -1 (no expiry) in the broken half, so shop-2's "
          "orders get 503 for good; a lease counting down in the fix half, then a sale.",
          "看杀掉之后键的 TTL：问题版本是 -1（永不过期），shop-2 的订单一直是 503；修复版本"
          "租约在倒数，到期后就能卖。"),
        T("SET key token NX PX lease: the expiry goes with the key, in one command.",
          "SET key token NX PX 租约：过期时间和键在同一条命令里设置。"),
        ("locks/redis_broken.py", "locks/redis_lock.py")),
    Lesson(
        "C10", "先 SETNX 再 EXPIRE：两条命令之间崩溃，锁就永不过期；一条 SET NX PX 不会",
        T("SETNX then EXPIRE are two commands. A process that crashes between them leaves a "
          "key with no expiry: the same dead lock as C09, through a smaller window. One SET NX "
          "PX cannot be cut in half.",
          "SETNX 和 EXPIRE 是两条命令。进程在两条命令之间崩溃，键就没有过期时间，和 C09 一样成了"
          "死锁，只是窗口更小。一条 SET NX PX 不会被拆成两半。"),
        {"A1": T("基于 REDIS 的 SETNX()、EXPIRE() 方法做分布式锁: the steps are setnx, then expire "
                 "as a separate call, because setnx cannot set a timeout.",
                 "“基于 REDIS 的 SETNX()、EXPIRE() 方法做分布式锁”：步骤是先 setnx，再单独调用 "
                 "expire，因为 setnx 不能设置超时时间。"),
         "A4": T("基于 Redis 实现分布式锁, its key points: always use SET key value NX PX; set "
                 "the value, then the expiry, and a crash in between leaves the key forever.",
                 "“基于 Redis 实现分布式锁”的要点：一定要用 SET key value NX PX；先设值再设过期时间"
                 "不是原子操作，中间宕机键就永久存在。")},
        T("The fault hook crash_after_setnx kills shop-1 between the two commands: the key "
          "has TTL -1 and shop-2 gets 503 (broken); the fix half has no second command to "
          "miss.",
          "故障钩子 crash_after_setnx 让 shop-1 在两条命令之间死掉：键的 TTL 是 -1，shop-2 收到 "
          "503（问题版本）；修复版本没有第二条命令可错过。"),
        T("One SET key token NX PX lease.", "一条 SET key token NX PX 租约。"),
        ("locks/redis_broken.py", "locks/redis_lock.py")),
    Lesson(
        "C11", "锁的过期时间短于业务执行时间：直接 DEL 会误删下一个持有者的锁；先核对唯一标识再释放就不会",
        T("A's lease runs out while A still works; B takes the lock; A finishes and its "
          "plain DEL deletes B's key; C walks in beside B: two holders. Write a random token "
          "into the key and delete only a key that still holds yours.",
          "A 还在干活，租约就过期了；B 拿到锁；A 做完后直接 DEL，删掉的是 B 的键；C 又进来，"
          "和 B 同时持有。往键里写一个随机的唯一标识，只删除仍然存着自己唯一标识的键。"),
        {"A0": T("Section 2.2 (互斥性): A, B and C with a 10 s expiry; A overruns, B gets the "
                 "lock, A deletes it, C gets it, and B and C hold at once. The cure it gives: "
                 "store the holder's unique mark and check it before deleting.",
                 "2.2 节（互斥性）：A、B、C 三个进程，过期时间 10 秒；A 超时，B 拿到锁，A 删掉了它，"
                 "C 又拿到，B 和 C 同时持有。给出的办法：存入当前线程的唯一标识，删除前先判断。"),
         "A2": T("三、锁误释放问题场景分析 tells the same story twice (two clients; a network "
                 "delay), and 四 and 五 give the cure: a uuid per acquisition, checked before "
                 "the release.",
                 "“三、锁误释放问题场景分析”讲了两遍同样的事（多客户端竞争、网络延迟），"
                 "第四、五部分给出办法：每次加锁生成一个 uuid，释放前先核对。")},
        T("Step 3 of each half: the broken DEL leaves no key (it was B's); the fixed release "
          "is refused and B keeps the lock. Step 4: two holders and one unit oversold, then "
          "none. Run from the console's Labs list, the lock view's timeline draws B and C's "
          "overlap in red (a run from the terminal draws nothing there).",
          "看两个版本的第 3 步：问题版本的 DEL 之后键没了（删掉的是 B 的锁）；修复版本的释放被拒绝，"
          "B 仍然持有。第 4 步：问题版本出现两个持有者、超卖 1 件，修复版本没有。在控制台的“实验”列表里"
          "运行时，锁视图的时间线会把 B 和 C 的重叠画成红色（在终端里运行则不会画）。"),
        T("A random token per acquisition in the key's value; release with a Lua script that "
          "deletes the key only if it still holds that token.",
          "每次加锁在键的值里写一个随机的唯一标识；释放时用 Lua 脚本，只有键里仍是这个唯一标识才删除。"),
        ("locks/redis_lock.py", "locks/redis_broken.py")),
    Lesson(
        "C12", "先 GET 比较再 DEL，中间同样有空档；Lua 脚本把比较和删除合成一步",
        T("Checking the token with GET and then deleting with DEL is two commands: the lease "
          "can run out and another client take the lock between them, and the DEL deletes "
          "that client's lock. One Lua script (or WATCH/MULTI) does the check and the delete "
          "as one step.",
          "先 GET 核对唯一标识再 DEL 是两条命令：两条之间租约可能过期、别的客户端拿到锁，"
          "DEL 删掉的就是它的锁。一段 Lua 脚本（或 WATCH/MULTI）把核对和删除变成一步。"),
        {"A0": T("Section 2.4 (Lua 脚本): every scheme above takes several commands, so "
                 "atomicity is the question; Redis runs a Lua script atomically, and the "
                 "plain mutex's release is GET, compare, DEL inside one script.",
                 "2.4 节（Lua 脚本）：前面的方案都要好几条命令，于是要考虑原子性；Redis 原子地执行 "
                 "Lua 脚本，普通互斥锁的释放就是把 GET、比较、DEL 写进一段脚本。"),
         "A2": T("五、代码实现 releases with WATCH on the key, GET, compare, then MULTI/DEL/EXEC, "
                 "retried when WATCH says the key changed.",
                 "“五、代码实现”释放时先 WATCH 这个键，GET、比较，再 MULTI/DEL/EXEC；WATCH 发现键变了"
                 "就重试。"),
         "A4": T("基于 Redis 实现分布式锁: releasing is two commands that are not atomic, so it "
                 "is done in a Lua script, which Redis runs atomically.",
                 "“基于 Redis 实现分布式锁”：释放锁涉及两条指令，不是原子的，所以用 Lua 脚本，"
                 "Redis 执行 Lua 脚本是原子的。")},
        T("The fault hook pause_before_del holds A between its GET and its DEL for one and a "
          "half leases: A's DEL then removes B's key (broken). The script has no between.",
          "故障钩子 pause_before_del 让 A 在 GET 和 DEL 之间停一个半租约：A 的 DEL 删掉了 B 的键"
          "（问题版本）。Lua 脚本执行期间不会插入其他命令，也就没有这个窗口。"),
        T("Compare-and-delete in one Lua script: if GET key == token then DEL key.",
          "用一段 Lua 脚本比较并删除：若 GET key 等于唯一标识则 DEL key。"),
        ("locks/redis_lock.py", "locks/redis_broken.py")),
    Lesson(
        "C13", "不可重入的锁，持有者再要一次就把自己锁死；“所有者 → 次数”的哈希解决它",
        T("A holder whose inner call asks for the same lock waits for itself until its "
          "timeout: a non-reentrant lock deadlocks on its own holder. A reentrant lock keeps "
          "a hash of owner to count: the owner may enter again, the count goes up, and each "
          "release counts down.",
          "持有者的内层调用再次请求同一把锁，就会等自己直到超时：不可重入的锁会把自己的持有者锁死。"
          "可重入锁保存一个“所有者 → 次数”的哈希：同一个所有者可以再次进入，次数加一，每次释放减一。"),
        {"A0": T("Section 2.3 (重入性): a second SETNX by the holder fails and may deadlock; "
                 "the reentrant version stores key, thread mark and count in a hash "
                 "(EXISTS, HEXISTS, HSET, HINCRBY, EXPIRE).",
                 "2.3 节（重入性）：持有者再执行 SETNX 一定失败，可能死锁；可重入的版本用哈希存锁的 "
                 "key、线程标识和重入次数（EXISTS、HEXISTS、HSET、HINCRBY、EXPIRE）。")},
        T("The inner call: it gives up after 0.3 s (broken); granted at once with a count of "
          "2, then 1 after the inner release, and the key gone after the outer (fix).",
          "看内层调用：问题版本 0.3 秒后放弃；修复版本立即拿到，次数变成 2，内层释放后是 1，"
          "外层释放后键被删除。"),
        T("A hash `lockshop:lock:<name>` of owner to count, changed only by Lua scripts.",
          "用哈希 `lockshop:lock:<名字>` 记录“所有者 → 次数”，只通过 Lua 脚本修改。"),
        ("locks/redis_reentrant.py", "locks/owner.py")),
    Lesson(
        "C14", "看门狗在持有者活着时为锁续期，持有者死后过一个过期时间锁就释放",
        T("A lease must outlive the work, but nobody knows how long the work takes. A "
          "watchdog renews a short lease while its holder lives; when the holder dies, its "
          "watchdog dies too, and the lock frees one lease later.",
          "锁的过期时间必须比业务执行时间长，可谁也说不准业务要执行多久。看门狗在持有者活着时不断为一个短租约续期；"
          "持有者死了，看门狗也跟着没了，锁在一个租约后释放。"),
        {"A4": T("②另一种方式：Redisson: Redisson's keys last 30 s by default, and its "
                 "watchdog sets the timeout back to 30 s every 10 s while the lock is held; "
                 "if the machine goes down, nothing renews and the key expires.",
                 "“②另一种方式：Redisson”：Redisson 的键默认 30 秒过期，看门狗在持有期间每 10 秒把"
                 "超时重设为 30 秒；机器宕机后没人续期，键自然过期。")},
        T("A works for 1 s on a short lease and B asks after 0.6 s: B gets in (no watchdog) "
          "or is refused (watchdog). Then the holder is killed: B gets the lock about one "
          "lease (300 ms) later.",
          "A 在短租约下干活 1 秒，B 在 0.6 秒时请求：没有看门狗时 B 进来了，有看门狗时 B 被拒绝。"
          "然后杀掉持有者：大约一个租约（300 毫秒）后 B 拿到锁。"),
        T("A renewal thread per hold that extends the lease every third of it, and reports a "
          "failed renewal as a lost lock before the commit.",
          "每次持有一个续期线程，每过三分之一租约续一次；续期失败就当作锁已丢失，在提交前报告。"),
        ("locks/redis_watchdog.py", "locks/watchdog.py", "locks/redisson.py")),
    Lesson(
        "C15", "持有者停顿到锁过期，在别人拿到锁之后才写入；防护令牌拒绝这次过期写入",
        T("A holder paused (a GC pause, SIGSTOP) past its lease still believes it holds the "
          "lock when it wakes, and writes over another holder's sale: a lost update that no "
          "check before the write can prevent. A fencing token, a number that grows with "
          "every acquisition, travels with the write, and the storage refuses a token older "
          "than one it has seen.",
          "持有者停顿（GC 停顿、SIGSTOP）到锁过期，醒来后仍以为自己持有锁，把另一个持有者写入的结果"
          "覆盖掉，造成丢失更新：写之前做多少检查都关不上这个窗口。防护令牌是每次加锁都会增大的数字，"
          "随写入一起提交，存储拒绝比它见过的更旧的防护令牌。"),
        {"A4": T("两种方案的优缺点比较: even Redlock cannot be 100% right in complex cases, and "
                 "the article sends the reader to the debate How to do distributed locking, "
                 "where the fencing token is the answer to a paused client.",
                 "“两种方案的优缺点比较”：即使用 Redlock 在复杂场景下也无法保证 100% 没问题，"
                 "文章让读者去看 How to do distributed locking 的讨论，防护令牌正是那里对暂停的"
                 "客户端给出的答案。")},
        T("A is paused past its lease, B sells, A wakes and writes over B's sale: sold 2, "
          "stock 4, one lost update (broken; nothing is sold beyond the stock, but one sale's "
          "decrement is lost); A's write is refused as a stale write and the audit counts it "
          "(fix).",
          "A 停顿到锁过期，B 卖出一件，A 醒来后把 B 的结果覆盖掉：卖出 2 件、库存还剩 4，丢失更新 "
          "1 次（问题版本：并没有卖超库存，但有一次扣减被覆盖了）；修复版本里 A 的写入因防护令牌过期"
          "被拒绝，审计会记下这次过期写入。"),
        T("Hand the token to the product row before reading (UPDATE … WHERE fence < :t) and "
          "write only while the row still holds it (WHERE fence = :t).",
          "读之前先把防护令牌交给商品行（UPDATE … WHERE fence < :t），写入时只有该行仍是这个令牌才"
          "生效（WHERE fence = :t）。"),
        ("locks/redis_lock.py", "shop/orders/order_path.py")),
    Lesson(
        "C16", "Redlock：五台中的多数，两台宕机照样加锁，三台宕机就拒绝",
        T("One Redis server is the lock: when it dies there is no lock at all. Redlock asks "
          "five independent servers and holds the lock when a majority (three) said yes "
          "within the validity time: it survives two servers down and refuses with three.",
          "一台 Redis 就是锁本身：它一死就没有锁了。Redlock 向五台独立的服务器请求，在有效时间内"
          "拿到多数（三台）同意就算持有：两台宕机仍能加锁，三台宕机就拒绝。"),
        {"A1": T("基于 REDLOCK 做分布式锁: N (usually 5) fully independent Redis nodes, the "
                 "same key and value on each, and the lock held only with more than half; it "
                 "keeps working with at most two nodes down.",
                 "“基于 REDLOCK 做分布式锁”：N 个（通常 5 个）完全独立的 Redis 节点，每个节点用相同的 "
                 "key 和 value 加锁，超过半数才算拿到；最多挂掉 2 个节点仍能工作。"),
         "A4": T("基于 Redis 实现分布式锁: after the single-server and master/replica problems, "
                 "the author's RedLock: five masters, a lock on n/2+1 of them, in less time "
                 "than the timeout.",
                 "“基于 Redis 实现分布式锁”：在单机和主从的问题之后，讲了作者提出的 RedLock：五个 "
                 "Master，在 n/2+1 个上加锁，且加锁用时小于超时时间。")},
        T("One server killed: backend unavailable (the shop answers 503). Five servers, two "
          "killed: the lock is granted; three killed: refused.",
          "一台服务器被杀：后端不可用（店铺返回 503）。五台中杀两台：照样加锁；杀三台：拒绝。"),
        T("Redlock over independent servers, sent to all five at once; the lock counts "
          "only with a majority and only while its validity lasts.",
          "在独立服务器上跑 Redlock，同时发给五台；只有拿到多数、且在有效期内，锁才算数。"),
        ("locks/redlock.py",)),
    Lesson(
        "C17", "Redlock 的弱点：一台服务器不带持久化重启，忘了一个键，第二个客户端也拿到多数",
        T("Redlock counts on each server remembering its keys for the lease. A server that "
          "restarts without persistence forgets A's key, and B can now get a majority of its "
          "own: two holders. Delaying the restart until the longest lease has run out closes "
          "it.",
          "Redlock 假定每台服务器在租约内记得自己的键。一台服务器不带持久化重启，忘了 A 的键，"
          "B 就可能凑出自己的多数：两个持有者。让它等最长的租约过完再重启，就关上了这个窗口。"),
        {"A4": T("基于 Redis 实现分布式锁 calls the algorithm much disputed and not certain to "
                 "be right, and 两种方案的优缺点比较 points to the debate How to do distributed "
                 "locking.",
                 "“基于 Redis 实现分布式锁”说这个算法颇具争议，不能保证加锁过程一定正确；"
                 "“两种方案的优缺点比较”让读者去看 How to do distributed locking 的讨论。")},
        T("A holds on three servers; one of them restarts empty; B asks: B also gets three "
          "(broken). With the delayed restart B is refused (fix).",
          "A 在三台上持有；其中一台清空重启；B 请求：问题版本 B 也拿到三台；延迟重启后 B 被拒绝。"),
        T("Restart a Redlock server only after the longest lease (or turn on fsync'd "
          "persistence); and prefer a lock with a fencing token where writes matter.",
          "Redlock 的服务器要等最长的租约过完才重启（或打开每次都落盘的持久化）；写入要紧的地方，"
          "宁可用带防护令牌的锁。"),
        ("locks/redlock.py",)),
    Lesson(
        "C18", "持有者死了：SETNX 的键永远留着，ZooKeeper 的临时节点随会话消失",
        T("A holder killed while it holds: a SETNX key with no expiry stays for good, but a "
          "ZooKeeper ephemeral node belongs to its holder's session, and ZooKeeper deletes it "
          "when the session ends. The lock frees itself.",
          "持有者在持有时被杀：没有过期时间的 SETNX 键永远留着；ZooKeeper 的临时节点属于持有者的"
          "会话，会话结束时 ZooKeeper 自动删除它，锁自己就释放了。"),
        {"A0": T("Zookeeper 实现分布式锁, on releasing: the client creates an ephemeral node, "
                 "and if it dies after taking the lock the node is deleted and others can "
                 "lock.",
                 "“Zookeeper 实现分布式锁”谈锁释放：客户端创建的是临时节点，拿到锁后突然挂掉，"
                 "节点会自动删除，其他客户端就能再拿到锁。"),
         "A1": T("ZK 基本锁: the ephemeral node's benefit is that when the process dies its "
                 "node goes, which cancels the lock.",
                 "“ZK 基本锁”：临时节点的好处是进程挂掉后节点自动删除，即取消了锁。"),
         "A3": T("Under 分布式锁 the note asks what happens when the holder dies with a flag "
                 "set in Redis; 简单的锁实现 answers with an ephemeral /lock node.",
                 "“分布式锁”一节问：在 Redis 里设了标志的持有者挂了怎么办；“简单的锁实现”用临时的 "
                 "/lock 节点回答。")},
        T("After the kill: the Redis key is still there and a second holder is refused "
          "(broken); the node is gone once the session times out, and the second holder "
          "gets in (fix).",
          "杀掉之后：Redis 的键还在，第二个持有者被拒绝（问题版本）；会话超时后节点消失，"
          "第二个持有者进来了（修复版本）。"),
        T("Lock with an ephemeral node (or, on Redis, a lease).",
          "用临时节点加锁（在 Redis 上则用租约）。"),
        ("locks/zk_simple.py", "locks/redis_broken.py")),
    Lesson(
        "C19", "羊群效应：ZooKeeper 的简单锁每次释放都唤醒所有等待者；顺序节点只唤醒一个",
        T("In the simple ZooKeeper lock every waiter watches the one lock node; each release "
          "wakes them all, they all race to create it, and all but one go back to waiting: "
          "the herd effect. With sequential nodes each waiter watches only the node just "
          "ahead, and a release wakes one.",
          "ZooKeeper 的简单锁里所有等待者都监听同一个锁节点；每次释放都把它们全部唤醒，一起去抢着"
          "创建，只有一个成功，其余又回去等：这就是羊群效应。用顺序节点时，每个等待者只监听排在它"
          "前面的那一个，一次释放只唤醒一个。"),
        {"A1": T("ZK 基本锁, its drawback: every process that failed to lock watches the node, "
                 "and a release brings them all back at once: 羊群效应. ZK 锁优化 then watches "
                 "only the next smaller node.",
                 "“ZK 基本锁”的缺点：所有取锁失败的进程都监听它，释放后一起来创建节点：羊群效应。"
                 "“ZK 锁优化”改为只监听比自己小的前一个节点。"),
         "A3": T("简单的锁实现: every deletion brings all clients to compete though only one "
                 "can pass (羊群效应); 简单锁实现的改进，避免羊群效应 gives the sequential "
                 "recipe.",
                 "“简单的锁实现”：每次删除锁，所有客户端都来竞争，但只能通过一个（羊群效应）；"
                 "“简单锁实现的改进，避免羊群效应”给出了顺序节点的做法。")},
        T("The wake-up count for the same turns: one per waiter per release with zk_simple, "
          "one per release with zk_fair. The metric lockshop_lock_herd_wakeups_total counts "
          "the same in /metrics.",
          "看同样轮转下的唤醒次数：zk_simple 每次释放唤醒每个等待者，zk_fair 每次释放只唤醒一个。"
          "/metrics 里的 lockshop_lock_herd_wakeups_total 数的是同一件事。"),
        T("Ephemeral sequential nodes; each waiter watches its predecessor only.",
          "用临时顺序节点；每个等待者只监听它的前一个节点。"),
        ("locks/zk_simple.py", "locks/zk_fair.py")),
    Lesson(
        "C20", "顺序节点让等待者先来后到；简单锁会让后来者插队",
        T("Sequential nodes queue waiters in the order they arrived, and the lowest holds: "
          "first come, first served. In the simple lock whoever is quickest to create the "
          "node after a release wins, and a newcomer can go ahead of a waiter that has "
          "waited longer.",
          "顺序节点让等待者按到达的先后排队，序号最小的持有锁：先来后到。简单锁在释放后谁先创建出节点"
          "谁就赢，新来的可能插到等了更久的等待者前面。"),
        {"A0": T("Zookeeper 实现分布式锁, the plan: each thread creates an ephemeral sequential "
                 "node under /lock, holds when its number is the smallest, otherwise watches "
                 "the node just before it.",
                 "“Zookeeper 实现分布式锁”的落地方案：每个线程在 /lock 下创建临时有序节点，序号最小"
                 "就持有锁，否则监听前一个节点。"),
         "A3": T("简单锁实现的改进: the pseudo-code creates lock- nodes EPHEMERAL|SEQUENTIAL, "
                 "lists the children, exits when its node is the lowest, and otherwise waits "
                 "on the node ordered just before it.",
                 "“简单锁实现的改进”：伪代码用 EPHEMERAL|SEQUENTIAL 创建 lock- 节点，列出子节点，"
                 "自己最小就返回，否则等待排在自己前面的那个节点。"),
         "A4": T("基于 Zookeeper 实现分布式锁: the smallest number holds, and a release wakes "
                 "the thread of the next number, which is now the smallest.",
                 "“基于 Zookeeper 实现分布式锁”：编号最小的获得锁，释放时激活比自己大一号的节点的"
                 "线程，它此时就是最小的。")},
        T("A waiter queues first and is paused at the release; a newcomer asks: the "
          "newcomer gets in first (simple lock), or the lock waits for the first waiter "
          "(fair lock).",
          "一个等待者先排队，释放时它被暂停；新来者请求：简单锁让新来者先进，公平锁把锁留给第一个"
          "等待者。"),
        T("Ephemeral sequential nodes, the lowest holding.", "临时顺序节点，序号最小的持有。"),
        ("locks/zk_fair.py", "locks/zk_simple.py")),
    Lesson(
        "C21", "读写锁让读者共享，写者等待",
        T("Readers that only look (a stocktake) need not exclude each other, only writers. "
          "A read/write lock lets readers hold it together while a writer waits for them.",
          "只读的读者（盘点）之间不必互斥，只需排斥写者。读写锁让读者一起持有，写者等它们读完。"),
        {"A3": T("读写锁实现: write- and read- sequential nodes; a writer waits for the node "
                 "just before it, a reader only for the last write node before it.",
                 "“读写锁实现”：write- 和 read- 两种顺序节点；写者等排在它前面的那个节点，"
                 "读者只等排在它前面的最后一个写节点。")},
        T("Several stocktakes at once: one after another under the exclusive lock, together "
          "(one stocktake's time) under zk_rw; then a sale asks and waits for the readers.",
          "同时做几次盘点：排他锁下一个接一个，zk_rw 下一起完成（只需一次盘点的时间）；"
          "随后一笔销售请求写锁，等读者读完。"),
        T("zk_rw: sales take the write lock, stocktakes the read lock.",
          "zk_rw：销售拿写锁，盘点拿读锁。"),
        ("locks/zk_rw.py", "shop/orders/stocktake.py")),
    Lesson(
        "C22", "持有者停顿时 ZooKeeper 会话过期，第二个持有者进来；用 zxid 做防护令牌挡住第一个",
        T("A paused holder cannot keep its session alive; ZooKeeper expires the session, "
          "deletes the holder's node, and a second holder gets the lock. When the first "
          "wakes, it writes unless the write is fenced: the creation zxid of its node is a "
          "token that only grows.",
          "停顿的持有者无法维持会话；ZooKeeper 让会话过期、删除它的节点，第二个持有者拿到锁。"
          "第一个醒来后照样写入，除非写入被防护：它的节点创建时的 zxid 就是一个只增不减的防护令牌。"),
        {"A4": T("基于 Zookeeper 实现分布式锁: an ephemeral node lives as long as the client "
                 "session, and is deleted once the session is no longer valid (会话失效).",
                 "“基于 Zookeeper 实现分布式锁”：临时节点的生命周期和客户端会话绑定，一旦客户端会话"
                 "失效，节点就会自动删除。")},
        T("A is paused past its session; B takes the lock and sells; A wakes and writes over "
          "B's sale: one lost update (broken); refused as a stale write (fix).",
          "A 停顿到会话超时；B 拿到锁并卖出一件；A 醒来后覆盖了 B 的结果：问题版本丢失一次更新；"
          "修复版本里 A 的写入作为过期写入被拒绝。"),
        T("Fence the write with the node's creation zxid, and check the session before the "
          "commit (ensure_held).",
          "用节点创建时的 zxid 防护写入，并在提交前核对会话（ensure_held）。"),
        ("locks/zk_fair.py", "shop/orders/order_path.py")),
    Lesson(
        "C23", "Redis 最快，ZooKeeper 最可靠，数据库最简单：各自的代价，实测",
        T("The three backends cost different things: Redis answers from memory in one round "
          "trip; every ZooKeeper lock is a quorum write with an fsync; a database lock is a "
          "transaction on a server you already run. Measured side by side on one machine.",
          "三种后端的代价各不相同：Redis 从内存里一次往返就回答；ZooKeeper 的每次加锁都是一次带 "
          "fsync 的多数派写入；数据库锁是你本来就在跑的服务器上的一个事务。在同一台机器上并排实测。"),
        {"A0": T("总结: Redis is simple to build and fastest but hard to keep reliable; "
                 "ZooKeeper is simplest to get right and most reliable, slower than Redis.",
                 "“总结”：Redis 实现比较简单、性能最高，但可靠性难以维护；ZooKeeper 实现最简单、"
                 "可靠性最高，性能比 Redis 低。"),
         "A4": T("两种方案的优缺点比较: Redis is fast but polls and is not strongly "
                 "consistent; ZooKeeper is robust and waits on a watch, but many clients "
                 "locking often load the cluster.",
                 "“两种方案的优缺点比较”：Redis 性能高，但要不断轮询，也不是强一致；ZooKeeper 模型"
                 "健壮、靠监听等待，但大量客户端频繁加锁会给集群很大压力。")},
        T("Lock-and-unlock pairs per second for redis, zk_fair and table on this machine's "
          "servers, and which way they point.",
          "看 redis、zk_fair、table 在本机服务器上每秒的加锁-解锁次数，以及它们指向哪一边。"),
        T("A measured lesson: no fix, a choice. Redis where speed matters and a lease is "
          "acceptable, ZooKeeper where the lock must not be lost, the database where it is "
          "already the bottleneck.",
          "这是一个测量型的知识点：没有修复，只有选择。要速度、能接受租约就用 Redis；锁不能丢就用 "
          "ZooKeeper；数据库本来就是瓶颈时就用数据库。"),
        ("lockshop/workshop/labs/measured.py", "locks/redis_lock.py", "locks/zk_fair.py",
         "locks/table_lock.py")),
    Lesson(
        "C24", "领导者选举让集群任务每个触发时刻只跑一次",
        T("Instead of a lock per fire time, the instances elect a leader through ZooKeeper, "
          "and only the leader runs the jobs. When it dies, another is elected after its "
          "session ends.",
          "不必每个触发时刻抢一次锁：各实例通过 ZooKeeper 选出一个领导者，只有领导者执行任务。"
          "它死了，会话结束后再选出另一个。"),
        {"A1": T("想办法: Quartz supports a cluster in which one instance goes on, done with "
                 "the database's row lock (select … for update).",
                 "“想办法”：Quartz 支持集群，靠数据库的行级锁（select … for update）保证只有一个实例"
                 "继续执行。")},
        T("Runs per fire time: three (one per instance) without a guard, one with leader "
          "election.",
          "看每个触发时刻的执行次数：没有保护时 3 次（每个实例一次），领导者选举时 1 次。"),
        T("job_guard = leader: ZooKeeper leader election; only the leader runs jobs, and "
          "only while it is connected.",
          "job_guard = leader：用 ZooKeeper 选举领导者；只有领导者、且只在连接正常时执行任务。"),
        ("locks/zk_election.py", "shop/jobs/scheduler.py")),
    Lesson(
        "C25", "也许不需要锁：一条带条件的 UPDATE 就是正确的",
        T("A lock guards a read-check-write. One conditional UPDATE (stock = stock - q WHERE "
          "stock >= q) checks and writes at once in the database: correct, with no lock, and "
          "the fastest of all.",
          "锁保护的是“读、判断、写”。一条带条件的 UPDATE（stock = stock - q WHERE stock >= q）"
          "在数据库里一步完成判断和写入：正确、不用锁，而且最快。"),
        {},
        T("Sold equals the stock; the rest of the buyers are refused as sold out.",
          "卖出等于库存；其余买家得到“已售罄”。"),
        T("Where the whole decision fits in one statement, let the database make it.",
          "整个判断能写进一条语句时，就交给数据库去做。"),
        ("shop/orders/transactions.py",)),
    Lesson(
        "C26", "尝试锁立即失败；阻塞的获取会等待，直到超时",
        T("A try-lock asks once and fails at once if the lock is held. A blocking acquire "
          "waits and retries until it gets the lock or its timeout ends; then the shop "
          "answers 503 with Retry-After.",
          "尝试锁只问一次，锁被占用就立即失败。阻塞的获取会等待、重试，直到拿到锁或超时；"
          "超时后店铺返回 503 并带上 Retry-After。"),
        {"A0": T("Section 1.2.2 (分布式锁) lists a blocking lock as optional: on failure it "
                 "can retry; section 2.1 (基本实现) ends or retries (a spin lock) when SET "
                 "returns nil.",
                 "1.2.2 节（分布式锁）把阻塞锁列为可选：获取失败时具备重试机制；2.1 节（基本实现）"
                 "在 SET 返回 nil 时结束或重试（自旋锁）。"),
         "A1": T("我们需要怎样的分布式锁？: the lock should preferably be a blocking lock, as "
                 "the business needs.",
                 "“我们需要怎样的分布式锁？”：这把锁最好是一把阻塞锁（根据业务需求考虑）。")},
        T("A holds for 100 ms: B's try-lock is refused at once; B's blocking acquire waits "
          "about 100 ms and gets it. A holds for good: B gives up when its timeout ends.",
          "A 持有 100 毫秒：B 的尝试锁立即被拒绝；B 的阻塞获取等约 100 毫秒后拿到。A 一直持有："
          "B 在超时后放弃。"),
        T("acquire(blocking=True, timeout=…) with a bounded wait; the timeout is "
          "LOCKSHOP_LOCK_TIMEOUT_MS in the shop.",
          "acquire(blocking=True, timeout=…)，等待有上限；店铺里的超时是 "
          "LOCKSHOP_LOCK_TIMEOUT_MS。"),
        ("locks/base.py",)),
    Lesson(
        "C27", "可重入锁的内层释放删掉了键，外层就没有保护了；应该减计数",
        T("A reentrant lock whose release deletes the key frees everything at the inner "
          "release: the outer section goes on with no lock and another owner walks in. The "
          "release must count down and delete only at zero.",
          "可重入锁如果释放时直接删键，内层一释放就全放开了：外层还在执行却已经没有锁，别的所有者"
          "趁机进来。释放必须减计数，减到零才删除。"),
        {"A0": T("Section 2.3 (重入性), on releasing: a reentrant lock cannot simply be "
                 "deleted at the innermost level, or the outer business runs without the "
                 "lock; subtract and delete at 0.",
                 "2.3 节（重入性）谈释放：可重入锁不能在最内层直接删除，否则外层业务在没有锁的情况下"
                 "执行；要减去重入次数，减到 0 才删除。")},
        T("After the inner release another owner asks: it gets in while the outer section "
          "runs (broken); it is refused because the count is still 1 (fix).",
          "内层释放后另一个所有者请求：问题版本它在外层还在执行时进来了；修复版本因为计数仍是 1 "
          "而被拒绝。"),
        T("HINCRBY owner -1 in the release script; DEL only when the count reaches 0.",
          "释放脚本里 HINCRBY 所有者 -1；计数到 0 才 DEL。"),
        ("locks/redis_reentrant.py", "locks/redis_broken.py")),
    Lesson(
        "C28", "用多条命令实现可重入加锁，可能让两个所有者同时持锁；一段 Lua 脚本不会",
        T("The reentrant acquire written as separate commands (EXISTS, then HSET, then "
          "PEXPIRE) lets two owners both see no key and both write their name. The same "
          "steps in one Lua script run as one.",
          "把可重入加锁写成分开的几条命令（先 EXISTS，再 HSET，再 PEXPIRE），两个所有者都可能看到"
          "键不存在、都写入自己的名字。同样的步骤放进一段 Lua 脚本就作为一步执行。"),
        {"A0": T("Section 2.3 lists the acquire as EXISTS, HEXISTS, HSET/HINCRBY and EXPIRE "
                 "steps; section 2.4 (Lua 脚本) notes that several commands raise the "
                 "question of atomicity and puts the acquire in a script.",
                 "2.3 节把加锁列为 EXISTS、HEXISTS、HSET/HINCRBY、EXPIRE 几步；2.4 节（Lua 脚本）"
                 "指出多条命令就要考虑原子性，把加锁写进了脚本。")},
        T("The fault hook pause_after_exists holds A between EXISTS and HSET: both A and B "
          "hold (broken); one holder, the other refused (fix).",
          "故障钩子 pause_after_exists 让 A 停在 EXISTS 和 HSET 之间：问题版本 A 和 B 都持有；"
          "修复版本只有一个持有者，另一个被拒绝。"),
        T("The whole acquire in one Lua script.", "整个加锁放进一段 Lua 脚本。"),
        ("locks/redis_reentrant.py", "locks/redis_broken.py")),
    Lesson(
        "C29", "ZooKeeper 的重入：节点里记下所有者，同一所有者可以再次进入",
        T("A ZooKeeper lock can be reentrant too: the owner is kept with its node, and the "
          "same owner asking again enters at once instead of queueing behind itself.",
          "ZooKeeper 锁也能可重入：所有者和它的节点记在一起，同一个所有者再次请求时立即进入，"
          "而不是排在自己后面。"),
        {"A0": T("Zookeeper 实现分布式锁, on reentrancy: write the client's host and thread "
                 "into the node, compare with the smallest node next time, and enter if it "
                 "is yours.",
                 "“Zookeeper 实现分布式锁”谈可重入：创建节点时把客户端的主机和线程信息写进去，"
                 "下次和最小节点的数据比较，一样就直接获得锁。"),
         "A4": T("基于 Zookeeper 实现分布式锁: the hand-written lock keeps its node per thread "
                 "(a ThreadLocal), and Curator's InterProcessMutex is the library's lock.",
                 "“基于 Zookeeper 实现分布式锁”：手写的锁按线程保存自己的节点（ThreadLocal），"
                 "库里现成的是 Curator 的 InterProcessMutex。")},
        T("The holder's inner call: it waits for its own node and gives up (the simple "
          "lock); granted at once, held after the inner release, free after the outer "
          "(zk_fair).",
          "看持有者的内层调用：简单锁里它等自己的节点然后放弃；zk_fair 立即拿到，内层释放后仍持有，"
          "外层释放后才空出来。"),
        T("Keep the owner (locks/owner.py) with the node, and a count per owner.",
          "把所有者（locks/owner.py）和节点记在一起，每个所有者一个计数。"),
        ("locks/zk_fair.py", "locks/owner.py")),
    Lesson(
        "C30", "ZooKeeper 集群失去领导者仍能加锁：没有单点故障",
        T("One ZooKeeper server is a single point: stop it and no lock can be had. An "
          "ensemble of three keeps serving locks while any two agree, through the loss of "
          "its leader.",
          "一台 ZooKeeper 是单点：停掉它就拿不到锁。三台组成的集群只要有两台一致就继续提供锁，"
          "失去领导者也一样。"),
        {"A0": T("Zookeeper 实现分布式锁, on availability: ZooKeeper solves the single point, "
                 "since it is deployed as a cluster.",
                 "“Zookeeper 实现分布式锁”谈高可用：ZK 是集群部署的，可以有效解决单点问题。"),
         "A1": T("ZOOKEEPER 锁相关基础知识: an ensemble of an odd number of nodes on the ZAB "
                 "protocol, which a client can treat as one server.",
                 "“ZOOKEEPER 锁相关基础知识”：ZK 一般由单数个节点构成，采用 ZAB 一致性协议，"
                 "可以把它看成一个单点。")},
        T("One server stopped: backend unavailable. The ensemble's leader killed: a lock is "
          "still granted once the others elect a new leader.",
          "单台服务器停掉：后端不可用。杀掉集群的领导者：其他服务器选出新领导者后照样能加锁。"),
        T("Run ZooKeeper as an ensemble of three or five.", "把 ZooKeeper 部署成三台或五台的集群。"),
        ("locks/zk_fair.py", "lockshop/cluster/zookeeper_servers.py")),
    Lesson(
        "C31", "单台 Redis 是单点：它宕机时什么也卖不出（也不会超卖）；五台 Redlock 服务器照常",
        T("With one Redis the lock service is one process: while it is down every order gets "
          "503, nothing is sold and nothing is oversold, and the shop recovers by itself "
          "when Redis returns. Redlock's five servers go on with one down.",
          "只有一台 Redis 时锁服务就是一个进程：它宕机期间每个订单都是 503，什么也卖不出，也不会"
          "超卖，Redis 回来后店铺自己恢复。Redlock 的五台服务器挂一台照常工作。"),
        {"A4": T("基于 Redis 实现分布式锁, the deployment modes: a single server is a single "
                 "point; if Redis fails, locking fails.",
                 "“基于 Redis 实现分布式锁”谈部署方式：单机模式存在单点问题，Redis 故障了，"
                 "加锁就不行了。")},
        T("Orders while the one server is down: all 503, oversold 0; under redlock with one "
          "server down: sold.",
          "看单台服务器宕机时的订单：全是 503，超卖 0；redlock 挂一台时：照常卖出。"),
        T("More than one server: Redlock, or a lock service that replicates by consensus "
          "(ZooKeeper).",
          "不止一台服务器：用 Redlock，或用靠共识复制的锁服务（ZooKeeper）。"),
        ("locks/redlock.py", "locks/redis_lock.py")),
    Lesson(
        "C32", "主从切换时异步复制丢了锁；防护令牌拒绝过期持有者的写入",
        T("A master acknowledges the lock before its replica has it. If the master fails "
          "and the replica is promoted, the lock is gone and a second client gets it. The "
          "first holder's late write is refused by its fencing token.",
          "主节点在副本收到之前就确认了加锁。主节点故障、副本被提升后，锁没了，第二个客户端拿到它。"
          "第一个持有者迟到的写入被防护令牌拒绝。"),
        {"A2": T("七、注意事项 (Redis 集群环境): in a Redis cluster some nodes may lag in "
                 "syncing, which can make locking and releasing disagree; Redlock is one "
                 "remedy it names.",
                 "“七、注意事项”（Redis 集群环境）：集群里部分节点可能同步延迟，导致加锁和释放不一致；"
                 "文章提到的办法之一是 Redlock。"),
         "A4": T("基于 Redis 实现分布式锁: with master/slave and Sentinel, a failover of the "
                 "master can lose the lock.",
                 "“基于 Redis 实现分布式锁”：Master-Slave + Sentinel 模式下，Master 故障发生主从"
                 "切换时，可能出现锁丢失。")},
        T("A locks on the master; the master dies before replicating; Sentinel promotes the "
          "replica; B locks there. Both hold; A's write lands (broken) or is refused as "
          "stale (fix).",
          "A 在主节点加锁；主节点在复制之前死掉；Sentinel 提升副本；B 在新主上加锁。两者都持有；"
          "问题版本 A 的写入生效，修复版本作为过期写入被拒绝。"),
        T("Fence writes with a token whose counter survives the failover (lockshop takes an "
          "epoch from the server's clock), or use a consensus-backed lock.",
          "用能挺过切换的防护令牌保护写入（lockshop 用服务器时钟取一个任期号），或改用基于共识的锁。"),
        ("locks/redis_lock.py", "lockshop/workshop/labs/failover.py")),
    Lesson(
        "C33", "Redlock 的有效时间：租约减去加锁用时再减去时钟漂移；单台超时要短；加锁失败时要在所有节点上释放锁",
        T("Redlock's lock is worth only what is left of the lease after the time spent "
          "asking, less an allowance for clock drift. Each server must time out far sooner "
          "than the lease, so a dead one costs little, and a failed attempt must unlock every "
          "server, not only those that said yes.",
          "Redlock 的锁只值租约减去加锁所花时间、再减去时钟漂移余量后剩下的部分。每台服务器的超时"
          "要远短于租约，这样一台死掉代价很小；加锁失败时要在所有节点上释放锁，而不只是答应了的那几台。"),
        {"A1": T("基于 REDLOCK 做分布式锁, steps 1 to 5: note the time, ask N nodes with a "
                 "per-call timeout far below the lock's (5–50 ms for 10 s), hold only with a "
                 "majority in less than the timeout, the lock's time is the timeout less the "
                 "time spent, and on failure delete the lock everywhere.",
                 "“基于 REDLOCK 做分布式锁”的 1～5 步：记下时间；向 N 个节点加锁，接口超时远小于锁超时"
                 "（10 秒的锁约 5～50 毫秒）；多数且用时小于超时才算成功；锁的时间是超时减去用时；"
                 "失败就依次删除所有的锁。"),
         "A4": T("基于 Redis 实现分布式锁: the RedLock steps, with short expiries per master "
                 "and deleting the lock in turn when it fails.",
                 "“基于 Redis 实现分布式锁”：RedLock 的步骤，每个 Master 的过期时间较短，"
                 "失败就依次删除这个锁。")},
        T("The figures: validity left after acquiring with two servers paused; the time "
          "spent on the paused ones (their 100 ms timeout); and no key left anywhere after a "
          "failed attempt with three paused.",
          "看数字：暂停两台时加锁后剩下的有效时间；花在暂停服务器上的时间（各自 100 毫秒超时）；"
          "暂停三台加锁失败后，哪台都没有留下键。"),
        T("A measured lesson: the figures point the article's way when the validity is the "
          "lease less the time spent and the drift.",
          "这是一个测量型的知识点：有效时间等于租约减去用时和漂移时，数字就指向文章说的方向。"),
        ("locks/redlock.py",)),
    Lesson(
        "C34", "轮询的锁不公平，而且等待时一直发命令；排队的锁让等待有上限",
        T("A lock that waits by polling (try, sleep, try) is unfair, since an unlucky waiter "
          "keeps losing to newcomers, and it keeps sending commands while it waits. A queued "
          "lock that is woken by the release bounds the wait and sends almost nothing.",
          "靠轮询等待的锁（试一下、睡一下、再试）不公平，运气差的等待者总是输给新来的，而且等待时"
          "一直在发命令。排队、由释放来唤醒的锁让等待有上限，几乎不发命令。"),
        {"A1": T("我们需要怎样的分布式锁？: the lock should preferably be fair, as the business "
                 "needs.",
                 "“我们需要怎样的分布式锁？”：这把锁最好是一把公平锁（根据业务需求考虑）。"),
         "A4": T("两种方案的优缺点比较: a Redis lock keeps trying to get the lock, which costs "
                 "performance; a ZooKeeper waiter adds a watch and does not poll.",
                 "“两种方案的优缺点比较”：Redis 获取不到锁就不断尝试，比较消耗性能；ZK 只需添加一个"
                 "监听器，不用一直轮询。")},
        T("The longest wait (about a second for the polling lock's unlucky waiter, tens of "
          "milliseconds queued) and the commands that waiter sent.",
          "看最长的等待（轮询锁里倒霉的等待者约一秒，排队的锁几十毫秒），以及那个等待者发出的命令数。"),
        T("A queued lock: redis_fair (BLPOP, a release wakes the head) or the ZooKeeper fair "
          "lock.",
          "排队的锁：redis_fair（BLPOP，释放唤醒队首）或 ZooKeeper 公平锁。"),
        ("locks/redis_fair.py", "locks/redis_lock.py")),
    Lesson(
        "C35", "定时任务执行得比锁的过期时间还久，除非写入前再核对一次锁，否则会跑两次",
        T("A job that outlives its lock's lease lets the next run take the lock and do the "
          "same work. A job that checks its lock last, in the transaction of its write, "
          "finds it gone and stops.",
          "任务比锁的租约还长时，下一次执行会拿到锁、做同样的事。任务在写入的事务里最后再核对一次锁，"
          "就会发现锁已不在而停下。"),
        {"A2": T("六、案例分析, the scheduling case: node A's nightly backup outlives its lock, "
                 "node B takes it and runs the same backup again.",
                 "“六、案例分析”的分布式任务调度场景：调度节点 A 执行备份超过了锁的时间，节点 B 拿到锁，"
                 "又执行了一遍同样的备份。")},
        T("Reminders per customer: two (both runs sent) in the broken half; one in the fix "
          "half, where A finds its lock gone before writing and its run is recorded as lost.",
          "看每位顾客的提醒数：问题版本两条（两次执行都发了）；修复版本一条，A 在写入前发现锁已不在，"
          "这次执行的结果记为 lost（锁已丢失）。"),
        T("Check the guard in the write's own transaction (ensure_held), and fence the "
          "job's writes by its token.",
          "在写入自己的事务里核对保护（ensure_held），并用防护令牌保护任务的写入。"),
        ("shop/jobs/guards.py", "shop/jobs/tasks.py")),
    Lesson(
        "C36", "租约的取舍：太短，慢的持有者丢锁；太长，死去的持有者占着锁",
        T("No fixed lease is right: too short and a slow holder loses the lock while it "
          "works; too long and everyone waits a whole lease after a crash. A short lease "
          "renewed while the holder lives (a watchdog) has neither cost.",
          "固定的租约怎么设都不对：太短，慢的持有者还在干活就丢了锁；太长，崩溃后所有人都要等满整个"
          "租约。短租约加上持有者活着时续期（看门狗），两头的代价都没有。"),
        {"A2": T("七、注意事项: an expiry set too short makes locks expire often; set too long, "
                 "a failed client holds the resource for a long time.",
                 "“七、注意事项”：过期时间设置过短，锁会频繁过期；设置过长，客户端故障时会长时间占用"
                 "资源。"),
         "A4": T("②另一种方式：Redisson: with a 30 s expiry a holder that takes longer loses "
                 "the key and another thread gets in; keeping the expiry up by hand is a "
                 "chore, which the watchdog does.",
                 "“②另一种方式：Redisson”：超时 30 秒，业务超过 30 秒键就过期，其他线程可能拿到锁；"
                 "自己维护过期时间太麻烦，看门狗替你做。")},
        T("Lease 200 ms: B gets in while A works. Lease 3 s: B waits about 3 s after a "
          "crash. Lease 300 ms renewed: B is refused while A works, and gets the lock well "
          "under a second after a crash.",
          "租约 200 毫秒：A 还在干活，B 就进来了。租约 3 秒：崩溃后 B 要等约 3 秒。300 毫秒加续期："
          "A 干活时 B 被拒绝，崩溃后不到一秒 B 就拿到锁。"),
        T("A short lease with a watchdog (redis_watchdog, redisson).",
          "短租约加看门狗（redis_watchdog、redisson）。"),
        ("locks/redis_watchdog.py", "locks/watchdog.py")),
    Lesson(
        "C37", "WATCH/MULTI 的释放在冲突时要重试，比 Lua 更贵",
        T("A release with WATCH, GET, MULTI, DEL and EXEC is correct, but EXEC is refused when "
          "the key changed in between, and the client must try again; it also costs more "
          "round trips than one Lua script.",
          "用 WATCH、GET、MULTI、DEL、EXEC 释放是正确的，但中间键一变 EXEC 就被拒绝，客户端要重试；"
          "它的往返次数也比一段 Lua 脚本多。"),
        {"A2": T("五、代码实现 gives the WATCH/MULTI release with its retry loop, and 八、性能与"
                 "优化 counts its cost: the WATCH and the retries add round trips, so cap "
                 "the retries.",
                 "“五、代码实现”给出 WATCH/MULTI 释放和它的重试循环，“八、性能与优化”算了它的代价："
                 "WATCH 和重试都会增加交互次数，所以要给重试设上限。")},
        T("EXEC refused when another client touches the key between GET and EXEC, then a "
          "retry; releases per second each way.",
          "GET 和 EXEC 之间另一个客户端动了键，EXEC 被拒绝，然后重试；再看两种方式每秒的释放次数。"),
        T("A measured lesson: the figures point the article's way when Lua is cheaper.",
          "这是一个测量型的知识点：Lua 更便宜时，数字就指向文章说的方向。"),
        ("locks/redis_lock.py", "lockshop/workshop/labs/measured.py")),
    Lesson(
        "C38", "被唤醒的等待者要重新看一遍队列；超时的等待者要删掉自己的节点",
        T("A waiter woken by the deletion of the node ahead must list the queue again: that "
          "node may have belonged to a waiter that gave up, with the holder still ahead. And "
          "a waiter that times out must delete its own node, or it blocks the queue behind it.",
          "被前一个节点删除唤醒的等待者，必须重新列一遍队列：那个节点可能属于一个放弃了的等待者，"
          "持有者仍排在前面。超时的等待者必须删掉自己的节点，否则会挡住后面的队列。"),
        {"A3": T("简单锁实现的改进: after the watch fires the pseudo-code goes back to step 2 "
                 "(list the children again), not straight to holding.",
                 "“简单锁实现的改进”：监听触发后伪代码回到第 2 步（重新获取子节点），而不是直接持有。"),
         "A4": T("Curator 介绍: internalLockLoop loops over the sorted children after every "
                 "wake-up, and a waiter whose time runs out deletes its own path.",
                 "“Curator 介绍”：internalLockLoop 每次被唤醒都重新取排序后的子节点；等待超时的"
                 "会删除自己的节点。")},
        T("W1 waits behind the holder, W2 behind W1; W1 gives up: W2 takes W1's deletion "
          "for the lock and holds beside the holder (broken); W2 looks again and waits (fix).",
          "W1 排在持有者后面，W2 排在 W1 后面；W1 放弃：问题版本 W2 把 W1 的删除当成锁到手，和持有者"
          "同时持有；修复版本 W2 重新看一遍，继续等待。"),
        T("On every wake-up, list the children again; on a timeout, delete your own node.",
          "每次被唤醒都重新列子节点；超时就删除自己的节点。"),
        ("locks/zk_fair.py", "locks/zk_broken.py")),
    Lesson(
        "C39", "等待中的写者不会被后来的读者饿死",
        T("A read/write lock that lets readers in whenever no writer holds it starves a "
          "waiting writer: as long as readers keep arriving, their reads overlap and the "
          "writer never gets in. Queued in arrival order, a reader that comes after a writer "
          "waits behind it.",
          "只要没有写者持有就放读者进来的读写锁，会饿死等待中的写者：读者不断到来，读互相重叠，"
          "写者永远进不去。按先来后到排队时，比写者晚到的读者要排在它后面。"),
        {"A3": T("读写锁实现: a reader waits for the last write node before its own, so a "
                 "writer that queued first goes first.",
                 "“读写锁实现”：读者要等排在自己前面的最后一个写节点，所以先排队的写者先进。")},
        T("A writer asks while readers keep arriving every 100 ms: it waits for ever (readers "
          "first) or gets the lock after the readers ahead of it (zk_rw).",
          "写者请求时读者每 100 毫秒来一个：读者优先的锁让它一直等；zk_rw 让它在排在前面的读者之后"
          "拿到锁。"),
        T("Queue readers and writers together in arrival order (zk_rw).",
          "读者和写者一起按先来后到排队（zk_rw）。"),
        ("locks/zk_rw.py", "locks/redis_broken.py")),
    Lesson(
        "C40", "在提交之前释放锁，下一个买家会读到旧库存",
        T("A lock released before the commit lets the next buyer in before the write is "
          "visible: it reads the old stock and writes over the first sale. The lock must be "
          "held until the commit.",
          "在提交之前释放锁，下一个买家会在写入可见之前进来：读到旧库存，覆盖第一笔销售。"
          "锁必须一直持有到提交之后。"),
        {"A1": T("基于数据库排他锁做分布式锁: the lock is released by connection.commit(), so "
                 "the exclusive lock lasts exactly as long as the transaction.",
                 "“基于数据库排他锁做分布式锁”：通过 connection.commit() 释放锁，排他锁恰好持续到事务"
                 "结束。")},
        T("Two buyers of the last unit: both sell and one update is lost (release first); "
          "the second reads the new stock and is refused (commit first).",
          "两个买家抢最后一件：先释放时两人都卖出、丢了一次更新；先提交时第二个读到新库存，被拒绝。"),
        T("Lock; read; write; commit; then release.", "加锁；读；写；提交；然后释放。"),
        ("shop/orders/order_path.py", "lockshop/workshop/labs/mariadb.py")),
    Lesson(
        "C41", "像 Quartz 那样用锁行做集群调度：每个触发时刻只跑一次",
        T("Quartz keeps its cluster's schedulers in step with a row lock: each takes "
          "SELECT … FOR UPDATE on a lock row before it decides whether a fire time has run. "
          "Without it, two schedulers both find the fire time not yet run and both run it.",
          "Quartz 用行锁让集群里的调度器步调一致：每个调度器在判断某个触发时刻是否已执行之前，先对"
          "锁行 SELECT … FOR UPDATE。没有它，两个调度器都发现还没执行，都去执行。"),
        {"A1": T("想办法: Quartz's clustering is done with a database lock, select … for update, "
                 "the row lock letting one instance go on.",
                 "“想办法”：Quartz 的集群通过数据库锁实现，select … for update，靠行级锁只让一个实例"
                 "继续执行。")},
        T("Runs per fire time among the schedulers: more than one without the row lock, "
          "exactly one with it.",
          "看每个触发时刻在各调度器上的执行次数：没有行锁时不止一次，有行锁时正好一次。"),
        T("Take the lock row FOR UPDATE, check the fire time, run it, commit.",
          "对锁行加 FOR UPDATE，检查触发时刻，执行，提交。"),
        ("lockshop/workshop/labs/mariadb.py", "shop/jobs/guards.py")),
    Lesson(
        "C42", "下单时扣掉的库存被未支付订单占着，直到过期任务把它退回",
        T("Taking stock at order time is kind to buyers, but an order that is never paid "
          "holds its units: the shop reads sold out with nothing paid. The expiry job gives "
          "the units back, which is why that job exists, and why it must run once (C04).",
          "下单即扣库存对买家友好，但永远不付款的订单占着库存：一件没付款，店铺却显示售罄。"
          "过期任务把库存退回，这就是它存在的原因，也是它必须只跑一次的原因（C04）。"),
        {"A0": T("Section 1.1 (业务场景): take stock off at order time (good for the buyer, but "
                 "an order never paid keeps it from others) or at payment; the article "
                 "chooses order time and a job that cleans up unpaid orders.",
                 "1.1 节（业务场景）：下单减库存（用户体验好，但一直不付款就占着库存）还是支付减库存；"
                 "文章选了下单减库存，再加一个定时清理超时未支付订单的任务。")},
        T("Three unpaid orders take the last three units: a buyer who would pay is told "
          "sold out; after the expiry job, that buyer gets one.",
          "三个未支付订单拿走最后三件：想付款的买家被告知售罄；过期任务跑过之后，这位买家买到了。"),
        T("An expiry job, guarded so that it runs once per fire time.",
          "一个过期任务，并加保护让它每个触发时刻只跑一次。"),
        ("shop/jobs/tasks.py",)),
    Lesson(
        "C43", "ZooKeeper 的每次加锁解锁都是多数派写入：频繁加锁会压垮集群",
        T("Every ZooKeeper lock and unlock is a write that a quorum must log (with an fsync) "
          "before it is answered. Frequent locking is a steady stream of writes to the "
          "ensemble, where Redis answers from memory.",
          "ZooKeeper 的每次加锁和解锁都是一次写入，要多数派记入日志（带 fsync）才会应答。频繁加锁"
          "就是对集群持续不断的写入，而 Redis 直接从内存回答。"),
        {"A4": T("两种方案的优缺点比较: ZooKeeper's drawback is the load many clients place on "
                 "the cluster when they lock and unlock often.",
                 "“两种方案的优缺点比较”：ZK 的缺点是较多客户端频繁加锁、释放锁时，对集群的压力比较大。")},
        T("ZooKeeper's transactions counted by its zxid across a run of lock and unlock "
          "pairs (two writes per pair), and the same loop's rate on Redis.",
          "看一段加锁解锁循环中 ZooKeeper 的事务数（由 zxid 计出，每对两次写入），以及同样的循环在 "
          "Redis 上的速率。"),
        T("A measured lesson: lock coarsely on ZooKeeper (leader election, long holds), "
          "not per request at high rates.",
          "这是一个测量型的知识点：在 ZooKeeper 上要粗粒度地加锁（领导者选举、长时间持有），"
          "不要在高频请求里逐个加锁。"),
        ("locks/zk_fair.py", "lockshop/workshop/labs/measured.py")),
    Lesson(
        "C44", "重试的订单被买了两次；Idempotency-Key 让重试找到第一单",
        T("A buyer whose order timed out cannot know whether it was taken; retrying blindly "
          "buys twice. An Idempotency-Key sent with every attempt of one order makes a retry "
          "find the first order instead of making a second.",
          "订单超时的买家不知道它是否成功；盲目重试就会买两次。同一笔订单的每次尝试都带上同一个 "
          "Idempotency-Key，重试就会找到第一单，而不是再下一单。"),
        {},
        T("Orders in the database for one buyer's one purchase: two without a key, one with "
          "it (the retry answered 201 with Idempotent-Replayed: true).",
          "看同一位买家同一次购买在数据库里的订单数：没有键时两单，有键时一单（重试得到 201，带 "
          "Idempotent-Replayed: true）。"),
        T("Write the key in the order's own transaction, as the primary key of order_keys.",
          "在订单自己的事务里写入这个键，作为 order_keys 的主键。"),
        ("shop/orders/idempotency.py",)),
    Lesson(
        "C45", "与 Redis 断开直到锁过期的持有者，在别人拿到锁后写入；防护令牌拒绝它",
        T("A holder cut off from Redis past its lease cannot renew or check anything; Redis "
          "lets the key expire and another takes the lock. When the link heals, the first "
          "writes unless the write is fenced.",
          "与 Redis 断开直到锁过期的持有者，既不能续期也不能核对；Redis 让键过期，别人拿到锁。"
          "网络恢复后，第一个持有者照样写入，除非写入被防护。"),
        {},
        T("shop-1 is cut off (packets dropped, as a real partition does); shop-2 sells; "
          "shop-1's write overwrites that sale (broken) or is refused as stale (fix).",
          "shop-1 被断开（像真实的网络分区那样丢包）；shop-2 卖出；shop-1 的写入覆盖了那笔销售"
          "（问题版本），或作为过期写入被拒绝（修复版本）。"),
        T("The fencing token, handed to the product before the read and checked by the write.",
          "防护令牌：读之前交给商品行，写入时核对。"),
        ("locks/redis_lock.py", "shop/orders/order_path.py", "lockshop/cluster/network.py")),
    Lesson(
        "C46", "与 ZooKeeper 断开超过会话的持有者已经丢了锁；提交前必须核对，zxid 挡住迟到的写入",
        T("A holder cut off from ZooKeeper sees its connection SUSPENDED, and its session "
          "expires on the server. It must check before it commits, and a write that still "
          "comes late is fenced by its node's zxid.",
          "与 ZooKeeper 断开的持有者会看到连接进入 SUSPENDED，服务器上它的会话随后过期。它必须在"
          "提交前核对，仍然迟到的写入由节点的 zxid 挡住。"),
        {},
        T("The cut holder's write: it trusts the holder and overwrites (broken); refused "
          "with lock_lost before the commit, or stale_write by the zxid (fix).",
          "看被断开的持有者的写入：信任持有者时它覆盖了别人（问题版本）；修复版本在提交前以 "
          "lock_lost 拒绝，或由 zxid 以 stale_write 拒绝。"),
        T("ensure_held() just before the commit, and the zxid as a fencing token.",
          "提交前调用 ensure_held()，并把 zxid 当作防护令牌。"),
        ("locks/zk_fair.py", "shop/orders/order_path.py")),
    Lesson(
        "C47", "到 Redis 的链路延迟让看门狗在持有者活着时漏掉续期；提交前核对和防护令牌能发现",
        T("A watchdog renews a lease every third of it, so it survives a round trip shorter "
          "than two thirds of the lease. Latency on the link makes a renewal land late: the "
          "key expires while the holder lives. Asking before the commit, and fencing, catch "
          "it.",
          "看门狗每过三分之一租约续一次，所以能容忍短于三分之二租约的往返。链路延迟让续期迟到："
          "持有者还活着，键就过期了。提交前核对和防护令牌能发现它。"),
        {},
        T("Renewals land further apart than the lease once 900 ms is added to the link; the "
          "order ends with lock_lost before the commit, and a late write is refused as stale.",
          "链路加上 900 毫秒延迟后，续期的间隔超过了租约；订单在提交前以 lock_lost 结束，迟到的写入作为"
          "过期写入被拒绝。"),
        T("Keep the lease well above the worst round trip; check before the commit; fence.",
          "租约要远大于最坏的往返时间；提交前核对；用防护令牌。"),
        ("locks/redis_watchdog.py", "lockshop/cluster/delayer.py")),
    Lesson(
        "C48", "与 ZooKeeper 断开的领导者，在别人当选后还在跑任务；除非连接挂起时就停止领导",
        T("A leader cut off from ZooKeeper cannot hear that its session expired and another "
          "was elected; if it leads from its election on, it goes on running jobs beside "
          "the new leader. A leader that leads only while connected stops at SUSPENDED.",
          "与 ZooKeeper 断开的领导者听不到自己的会话已过期、别人已当选；如果它从当选起就一直自认为"
          "领导者，就会和新领导者同时跑任务。只在连接正常时才行使领导权的领导者，一进入 SUSPENDED 就停下。"),
        {},
        T("Fire times run on both the old and the new leader during the cut (broken); none "
          "on the cut one (fix).",
          "看断开期间的触发时刻：问题版本新旧领导者都在跑；修复版本被断开的那个一次也没跑。"),
        T("is_leader(): connected, same session; ask the server before writing.",
          "is_leader()：连接正常、会话未变；写入前先问服务器。"),
        ("locks/zk_election.py", "shop/jobs/scheduler.py")),
    Lesson(
        "C49", "用线程号当所有者，会让下一个线程进入已死线程的锁（Python 复用线程号）；每个线程各生成一个所有者就不会",
        T("Python hands a dead thread's id to the next thread. A reentrant lock whose owner "
          "is the thread id takes that new thread for the dead owner and lets it re-enter a "
          "lock it never took. An owner made once per thread, with a random part, never "
          "repeats.",
          "Python 会把已死线程的线程号交给下一个线程。以线程号作为所有者的可重入锁，会把新线程当成"
          "死去的所有者，让它重入一把从未拿过的锁。每个线程各生成一次、带随机部分的所有者永远不会重复。"),
        {},
        T("Worker A ends holding the lock; worker B gets A's thread id and asks without "
          "waiting: B re-enters (broken); B is refused as another owner (fix).",
          "工作线程 A 持有锁时结束；B 拿到 A 的线程号，不等待地请求：问题版本 B 重入了；"
          "修复版本 B 作为另一个所有者被拒绝。"),
        T("current_owner(): host, pid, thread id and a random part, kept in threading.local "
          "(per asyncio task in a weak map).",
          "current_owner()：主机、进程号、线程号加一个随机部分，保存在 threading.local 里"
          "（asyncio 任务则在弱引用映射里）。"),
        ("locks/owner.py", "locks/redis_reentrant.py")),
    Lesson(
        "C50", "抢锁快但会饿死等待者，排队公平却慢；像 Go 的 mutex 那样有两种模式的锁两者兼得",
        T("A lock that lets whoever asks first take it (barging) keeps the running process "
          "running: many sections a second, and a waiter that keeps losing the race waits a "
          "second or more. A queue that hands the lock to its head on every release bounds "
          "every wait, and pays for it at every section: a sleeper has to be woken while the "
          "lock sits idle. Go's sync.Mutex does both: it lets newcomers barge until a waiter "
          "has waited past a threshold, then hands the lock over. redis_two_mode does the "
          "same in two Lua scripts.",
          "先到先得（抢锁）的锁让正在运行的进程接着运行：每秒完成的临界区多，但总是抢输的等待者"
          "要等一秒甚至更久。队列每次释放都把锁交给队首，每次等待都有上限，代价却落在每个临界区上："
          "锁空着，要等一个睡着的进程被唤醒。Go 的 sync.Mutex 两者兼得：等待者等得不超过一个阈值时"
          "允许新来的抢锁，超过了就直接把锁交给队首。redis_two_mode 用两段 Lua 脚本做了同样的事。"),
        {},
        T("The three locks side by side: the barging lock's longest wait (hundreds of ms), "
          "the queue's owner switching at nearly every section with the lock idle between "
          "holders, and the two-mode lock with a short longest wait and few hand-offs. The "
          "threshold is set from the barging lock's own section time in the same run.",
          "把三把锁放在一起看：抢锁的锁最长等待几百毫秒；队列几乎每个临界区都换持有者，"
          "换手之间锁空着；两种模式的锁最长等待短，交接也少。阈值由同一次运行里抢锁的锁自己的"
          "临界区耗时定出。"),
        T("Barge while the head of the queue has waited less than a threshold (tens of "
          "sections: a hand-off costs a process's wake-up); past that, hand the lock to it on "
          "release, and let no newcomer take a free lock ahead of it. Keep one waiter awake, "
          "not one per release. Decide the mode where the lock is decided, atomically (here, "
          "in the Lua scripts).",
          "队首等待不到一个阈值（几十个临界区：交接一次要唤醒一个进程）时允许抢锁；超过了，释放时"
          "就把锁直接交给队首，新来的也不能越过它去拿空着的锁。只让一个等待者醒着，而不是每次释放"
          "都唤醒一个。模式在决定锁归属的地方原子地决定（这里是在 Lua 脚本里）。"),
        ("locks/redis_two_mode.py", "locks/redis_fair.py", "locks/redis_lock.py")),
)

LESSONS: dict[str, Lesson] = {lesson.id: lesson for lesson in _LESSONS}


# --- what the handbook asks of the lab registry and the exercises ------------------------

def labs() -> dict:
    """The lab registry, by id (imported late: it brings the whole tooling with it)."""
    from lockshop.workshop.labs import LABS

    return LABS


def exercises() -> tuple[str, list[dict]]:
    """Where the exercises come from ("lockshop.exercises", or "planned" when that
    package does not import) and each one as {id, file, title: Text, lessons}."""
    try:
        from lockshop.exercises import EXERCISES
    except ImportError:
        return "planned", [{"id": number, "file": file, "title": title, "lessons": lessons}
                           for number, (file, title, lessons) in EXERCISE_PATH.items()]
    found = []
    for exercise in EXERCISES.values():
        planned = EXERCISE_PATH.get(exercise.id)
        chinese = planned[1].zh if planned and planned[0] == exercise.file else exercise.title
        found.append({"id": exercise.id, "file": exercise.file,
                      "title": Text(exercise.title, chinese), "lessons": exercise.lessons})
    return "lockshop.exercises", found


def exercises_for(lesson_id: str) -> list[dict]:
    """The exercises whose checks grade this lesson."""
    return [e for e in exercises()[1] if lesson_id in e["lessons"]]


def page(lab) -> str:
    """The lesson page that holds a lab's lesson in full, from the handbook's root:
    its first article's page, or the page of the lessons beyond the articles."""
    article = lab.articles[0] if lab.articles else "beyond"
    return f"lessons/{article.lower()}.md"


def url(lesson_id: str, language: str = "en") -> str:
    """A lesson's address in the built handbook, from its root ("lessons/a2/#c11"; the
    Chinese pages under "zh/"): what the console links to."""
    lab = labs()[lesson_id.upper()]
    prefix = "zh/" if language.startswith("zh") else ""
    return f"{prefix}{page(lab).removesuffix('.md')}/#{lab.id.lower()}"


def missing() -> list[str]:
    """What the registry has and this file does not: a lab with no lesson text, or an
    article a lab names with no paraphrase. Empty when the handbook is complete."""
    problems = []
    for lab in labs().values():
        lesson = LESSONS.get(lab.id)
        if lesson is None:
            problems.append(f"{lab.id} ({lab.name}): no lesson in lockshop/workshop/lessons.py")
            continue
        for article in lab.articles:
            if article not in lesson.where:
                problems.append(f"{lab.id}: no paraphrase of {article}")
        for article in lesson.where:
            if article not in lab.articles:
                problems.append(f"{lab.id}: a paraphrase of {article}, which the lab does not "
                                "name")
    return problems
